// star's sample data for `GET /responses/example` (and `/?example=true`): resources A to E whose
// responses are probe status documents. A→b,c,d reachable; B→a reachable, B→c not, B→d reachable;
// C→a,b,d unreachable; D→a,b unreachable and D→foobar, which is not a resource; E has no response
// (null, as in star), and its detail says its fetch timed out, so that Starmap's UI keeps E on
// screen as failing. Targets carry the probe's extra fields (reason, latency, times), and the times
// are relative to the request, so the sample never looks stale.
import { starResponse, type ResponseDetail, type StarResponse } from './responses.ts';

type Edge = [to: string, reachable: boolean, reason?: 'timeout' | 'refused'];

const EDGES: Record<string, Edge[]> = {
  a: [
    ['b', true],
    ['c', true],
    ['d', true],
  ],
  b: [
    ['a', true],
    ['c', false, 'timeout'],
    ['d', true],
  ],
  c: [
    ['a', false, 'timeout'],
    ['b', false, 'timeout'],
    ['d', false, 'refused'],
  ],
  d: [
    ['a', false, 'timeout'],
    ['b', false, 'refused'],
    ['foobar', false, 'timeout'],
  ],
};

const statusUrl = (x: string) => `http://${x}/status`;

export interface ResponsesDocument {
  responses: Record<string, StarResponse | null>;
  details: Record<string, ResponseDetail>;
  generatedAt: string;
}

/** The sample as `GET /responses` would serve it at `now`. */
export function exampleDocument(now = Date.now()): ResponsesDocument {
  const at = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
  const responses: Record<string, StarResponse | null> = {};
  const details: Record<string, ResponseDetail> = {};
  let n = 0;
  for (const [from, edges] of Object.entries(EDGES)) {
    const targets = edges.map(([to, reachable, reason], i) => ({
      reachable,
      url: statusUrl(to),
      reason: reachable ? 'ok' : reason!,
      message: reachable ? null : reason === 'timeout' ? 'no answer within 1000 ms' : 'ECONNREFUSED: connect ECONNREFUSED',
      latencyMs: reachable ? 0.8 + ((n + i) % 5) * 0.3 : reason === 'timeout' ? 1000.4 : 0.3,
      statusCode: reachable ? 200 : null,
      checkedAt: at(1),
      changedAt: at(reachable ? 300 : 42 + i),
    }));
    n++;
    const id = from.toUpperCase();
    responses[id] = starResponse(statusUrl(from), 200, { status: { targets } });
    details[id] = { url: statusUrl(from), statusCode: 200, error: null, fetchedAt: at(0.5), latencyMs: 1.5 + n * 0.2, lastSuccessAt: at(0.5), pending: false };
  }
  responses.E = null;
  details.E = {
    url: statusUrl('e'),
    statusCode: null,
    error: { reason: 'timeout', message: 'no answer within 2000 ms' },
    fetchedAt: at(0.5),
    latencyMs: 2000.3,
    lastSuccessAt: null,
    pending: false,
  };
  return { responses, details, generatedAt: new Date(now).toISOString() };
}

/** The sample as `GET /resources` would list it. */
export function exampleResources(): { id: string; url: string }[] {
  return ['a', 'b', 'c', 'd', 'e'].map((x) => ({ id: x.toUpperCase(), url: statusUrl(x) }));
}
