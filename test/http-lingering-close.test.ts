// A body over the limit is answered 413 from its headers; the rest of the body is read and thrown
// away before the answer goes out (shared/lingering-close.ts), so that a client that writes its
// whole body before it reads (fetch, undici) gets the 413 instead of EPIPE. Within bounds: a client
// that stops sending or sends too much gets the answer at once and the connection closes. The probe
// (shared/http-server.ts, as the collector) and the orchestrator as real processes.
import { createServer as createHttpServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { drainRequest } from '../shared/lingering-close.ts';
import { startOrchestrator } from './helpers/orchestrator.ts';
import { stopAll } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});
afterAll(async () => {
  await stopAll();
});

/** Headers announcing `length` bytes, then nothing: what the server answers, and whether it closes. */
function headersOnly(url: string, path: string, length: number): Promise<{ head: string; closed: boolean }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (d) => (text += d.toString()));
    socket.on('error', reject);
    socket.on('end', () => resolve({ head: text.split('\r\n')[0]!, closed: true }));
    socket.write(`POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n{`);
  });
}

const BIG = Buffer.alloc(20 * 1024 * 1024, 'a');

describe('lingering close after a 413', () => {
  it('the probe: fetch sending 20 MiB gets the 413; a client that stops sending gets it too, and the close', async () => {
    const { url } = await startProbe(['--urls=127.0.0.1:9']);
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/urls`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BIG });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { code: string }).code).toBe('FST_ERR_CTP_BODY_TOO_LARGE');
    }
    expect(await headersOnly(url, '/urls', 1_000_000_000)).toEqual({ head: 'HTTP/1.1 413 Payload Too Large', closed: true });
  });

  it("the orchestrator: fetch sending 20 MiB gets Marathon's 413", async () => {
    const o = await startOrchestrator();
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${o.url}/v2/apps`, { method: 'POST', headers: { 'content-type': 'application/json', ...o.authHeaders }, body: BIG });
      expect([res.status, await res.json()]).toEqual([413, { message: 'Request body is too large' }]);
    }
  });

  it('drainRequest reads the whole rest, or gives up past its bytes or when the client goes quiet', async () => {
    const server = createHttpServer((req, res) => {
      void drainRequest(req, { maxBytes: 1000, idleMs: 200 }).then((all) =>
        res.setHeader('connection', all ? 'keep-alive' : 'close').end(JSON.stringify({ all })),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(r)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = async (bytes: number) => (await (await fetch(`${url}/things`, { method: 'POST', body: Buffer.alloc(bytes) })).json()) as { all: boolean };
    expect(await post(500)).toEqual({ all: true });
    expect(await post(100_000).catch(() => ({ all: false }))).toEqual({ all: false });
    const quiet = await headersOnly(url, '/things', 100);
    expect(quiet).toEqual({ head: 'HTTP/1.1 200 OK', closed: true });
  });
});
