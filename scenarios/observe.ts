// Reads what the agents see: each probe's GET /status (from the host, which every policy lets in,
// like a kubelet) and the collector's GET /responses, and turns them into one observation per
// scenario edge.
import { request } from 'undici';
import { edgeKey, type Observation } from './matrix.ts';
import type { PlannedApp } from './deploy-plan.ts';

export interface Located {
  app: PlannedApp;
  /** Base URL where the runner reaches the app, e.g. http://10.213.0.5:80 or http://127.0.0.1:41000. */
  base: string;
  /** For probes: target URL (as configured) → scenario app name. */
  targets: Map<string, string>;
}

interface ProbeTarget {
  url: string;
  reachable: boolean;
  reason?: string | null;
  checkedAt?: string | null;
  changedAt?: string | null;
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await request(url, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`HTTP ${res.statusCode}`);
  }
  return res.body.json();
}

/** One observation per edge; an agent that cannot be read gives `unknown` for all its edges. */
export async function observe(located: Located[], timeoutMs = 1500): Promise<Map<string, Observation>> {
  const out = new Map<string, Observation>();
  await Promise.all(
    located.map(async (l) => {
      if (l.app.kind === 'probe') {
        try {
          const doc = (await getJson(`${l.base}${l.app.statusPath}`, timeoutMs)) as { status?: { targets?: ProbeTarget[] } };
          for (const t of doc.status?.targets ?? []) {
            const to = l.targets.get(t.url);
            if (!to) continue;
            out.set(edgeKey(l.app.name, to), {
              verdict: t.checkedAt === null ? 'unknown' : t.reachable ? 'allow' : 'deny',
              reason: t.reason ?? null,
              changedAt: t.changedAt ?? null,
            });
          }
        } catch (err) {
          for (const to of l.targets.values()) out.set(edgeKey(l.app.name, to), { verdict: 'unknown', reason: `probe unreadable: ${(err as Error).message}`, changedAt: null });
        }
      } else if (l.app.kind === 'collector') {
        try {
          type Detail = { error?: { reason?: string } | null; fetchedAt?: string | null; statusCode?: number | null } | null;
          const doc = (await getJson(`${l.base}${l.app.statusPath}`, timeoutMs)) as { responses?: Record<string, Detail>; details?: Record<string, Detail> };
          for (const to of l.targets.values()) {
            // The fetch's outcome is in `details` (`responses` keeps star's shape: null on failure).
            const r = doc.details?.[to];
            out.set(edgeKey(l.app.name, to), !r || r.fetchedAt === null ? { verdict: 'unknown', reason: 'not fetched yet', changedAt: null } : r.error ? { verdict: 'deny', reason: r.error.reason ?? 'error', changedAt: null } : { verdict: 'allow', reason: 'ok', changedAt: null });
          }
        } catch (err) {
          for (const to of l.targets.values()) out.set(edgeKey(l.app.name, to), { verdict: 'unknown', reason: `collector unreadable: ${(err as Error).message}`, changedAt: null });
        }
      }
    }),
  );
  return out;
}
