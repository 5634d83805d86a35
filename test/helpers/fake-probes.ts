// Many "probes" on one loopback HTTP server, for UI tests that need 3, 12 or 50 nodes without 50
// processes: GET /<id> answers a probe status document whose targets are the other ids' URLs on
// the same server, reachable or not by a fixed pattern; ids in `failing` answer HTTP 500.
import http from 'node:http';
import type net from 'node:net';

export interface FakeProbes {
  url: (id: string) => string;
  close: () => Promise<void>;
}

/** Whether `from` reaches `to` in the fake network: a fixed pattern, about one in three blocked. */
export const fakeReachable = (ids: readonly string[], from: string, to: string): boolean => (ids.indexOf(from) * 2 + ids.indexOf(to)) % 3 !== 0;

export async function fakeProbes(ids: readonly string[], failing: readonly string[] = []): Promise<FakeProbes> {
  let base = '';
  const server = http.createServer((req, res) => {
    const id = decodeURIComponent((req.url ?? '/').slice(1));
    if (!ids.includes(id) || failing.includes(id)) {
      res.writeHead(ids.includes(id) ? 500 : 404, { 'content-type': 'application/json' }).end('{}');
      return;
    }
    const targets = ids.map((to) => {
      const reachable = fakeReachable(ids, id, to);
      return {
        url: `${base}/${encodeURIComponent(to)}`,
        reachable,
        reason: reachable ? 'ok' : 'timeout',
        message: reachable ? null : 'no answer within 500 ms',
        latencyMs: 1,
      };
    });
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: { targets } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url: (id) => `${base}/${encodeURIComponent(id)}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
