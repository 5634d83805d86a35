// Asks every probe of a deployment to check all its targets now (the probe's POST /cycle), right
// after a step's policies are in place: the step then settles about one check timeout after the
// change instead of up to a probe interval later. Nothing is inferred from it: a cell still
// counts only once a check that started after the change reports it (settle.ts). A probe that
// cannot be poked (an older or star's own, without the route) is left to its cycle.
import { request } from 'undici';
import type { Located } from './observe.ts';

/** Pokes the probes among `located` that check something; resolves with how many accepted. */
export async function pokeProbes(located: readonly Located[], timeoutMs = 1000): Promise<number> {
  const answers = await Promise.all(
    located
      .filter((l) => l.app.pod.kind === 'probe' && l.app.targets.size > 0)
      .map(async (l) => {
        try {
          const res = await request(`${l.base}/cycle`, {
            method: 'POST',
            headersTimeout: timeoutMs,
            bodyTimeout: timeoutMs,
            signal: AbortSignal.timeout(timeoutMs),
          });
          await res.body.dump();
          return res.statusCode === 202;
        } catch {
          return false;
        }
      }),
  );
  return answers.filter(Boolean).length;
}
