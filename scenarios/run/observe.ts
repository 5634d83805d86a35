// Reads what the agents see: each probe's GET /status (from the host, which every policy lets in,
// like a kubelet) and the collector's GET /responses, and turns them into one observation per cell.
import { request } from 'undici';
import type { PlannedApp } from './deploy-plan.ts';
import type { Observation } from '../report/results.ts';

export interface Located {
  app: PlannedApp;
  /** Base URL where the runner reaches the app, e.g. http://10.213.0.5:80 or http://127.0.0.1:41000. */
  base: string;
  /** Isolated: the host port the orchestrator published the pod's API port on (its --publish-address), when it did. */
  published?: number;
}

export type { Observation };

interface ProbeTarget {
  url: string;
  reachable: boolean;
  reason?: string | null;
  checkedAt?: string | null;
  changedAt?: string | null;
}

/** The collector's per-resource state: Starmap's `details` map (collector/responses.ts), or the older inline form. */
interface CollectorEntry {
  error?: { reason?: string } | null;
  fetchedAt?: string | null;
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`HTTP ${res.statusCode}`);
  }
  return res.body.json();
}

/** One observation per cell key; an agent that cannot be read gives no value for all its cells. */
export async function observe(located: readonly Located[], timeoutMs = 1500): Promise<Map<string, Observation>> {
  const out = new Map<string, Observation>();
  await Promise.all(
    located.map(async (l) => {
      if (l.app.targets.size === 0) return;
      try {
        const doc = (await getJson(`${l.base}${l.app.statusPath}`, timeoutMs)) as {
          status?: { targets?: ProbeTarget[] };
          responses?: Record<string, CollectorEntry | null>;
          details?: Record<string, CollectorEntry | null>;
        };
        if (l.app.pod.kind === 'probe') {
          for (const t of doc.status?.targets ?? []) {
            const cell = l.app.targets.get(t.url);
            if (!cell) continue;
            const checked = t.checkedAt ?? null;
            out.set(cell.key, { allowed: checked === null ? null : t.reachable, reason: t.reason ?? null, checkedAt: checked, changedAt: t.changedAt ?? null });
          }
        } else {
          for (const [id, cell] of l.app.targets) {
            const r = doc.details?.[id] ?? doc.responses?.[id];
            const fetchedAt = r?.fetchedAt ?? null;
            out.set(
              cell.key,
              fetchedAt === null
                ? { allowed: null, reason: 'not fetched yet', checkedAt: null, changedAt: null }
                : { allowed: !r!.error, reason: r!.error ? (r!.error.reason ?? 'error') : 'ok', checkedAt: fetchedAt, changedAt: null },
            );
          }
        }
      } catch (err) {
        for (const cell of l.app.targets.values())
          out.set(cell.key, { allowed: null, reason: `${l.app.pod.kind} unreadable: ${(err as Error).message}`, checkedAt: null, changedAt: null });
      }
    }),
  );
  return out;
}
