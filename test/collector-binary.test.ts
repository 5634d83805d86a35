// The collector executable as a user gets it (copied alone into an empty folder, no Node on PATH),
// together with the probe executable: the README's probe-and-collector set-up end to end. `npm test` builds
// both first (npm run build).
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLOSED_PORT, ROOT, freePort, runToEnd, start, stopAll, tempDir, waitForHttp } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const BIN = join(ROOT, 'dist', 'bin', 'collector');
const PROBE = join(ROOT, 'dist', 'bin', 'probe');
const UI = join(ROOT, 'collector', 'ui');

const closers: (() => void)[] = [];
afterAll(async () => {
  closers.forEach((c) => c());
  await stopAll();
});

interface Entry {
  url: string;
  statusCode: number | null;
  json: { status: { targets: { url: string; reachable: boolean; reason: string }[] } } | null;
}

function alone(bin: string): string {
  const copy = join(tempDir('starmap-bin-'), 'collector');
  copyFileSync(bin, copy);
  return copy;
}

describe('dist/bin/collector', () => {
  it('exists (run `npm run build` first)', () => {
    expect(existsSync(BIN), `${BIN} is missing: run npm run build`).toBe(true);
    expect(existsSync(PROBE), `${PROBE} is missing: run npm run build`).toBe(true);
  });

  it('runs alone without Node on PATH; a bad resources file exits 2 naming it', async () => {
    const bin = alone(BIN);
    const version = await runToEnd(bin, ['--version'], { env: { PATH: '/nonexistent' } });
    expect(version.code).toBe(0);
    expect(version.output.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const file = join(tempDir(), 'bad.json');
    writeFileSync(file, '[{"id":"a","url":"http://a/"},{"id":"b","url":"ftp://b/"}]');
    const bad = await runToEnd(bin, [`--resources-file=${file}`], { env: { PATH: '/nonexistent' } });
    expect(bad.code).toBe(2);
    expect(bad.output).toContain(`${file}: entry at index 1: field "url"`);
  });

  it("collects a probe's /status (end to end) and serves the embedded UI", async () => {
    // What the probe checks: one open HTTP server and one closed port, all on loopback.
    const web = http.createServer((_q, r) => r.end('ok'));
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    closers.push(() => web.close());
    const webUrl = `http://127.0.0.1:${(web.address() as net.AddressInfo).port}/`;
    const closedUrl = `http://127.0.0.1:${CLOSED_PORT}/`;
    const probe = await startProbe([`--urls=${webUrl},${closedUrl}`, '--http-probe-seconds=0.2'], { binary: PROBE });

    const dir = tempDir('starmap-collector-');
    const file = join(dir, 'resources.json');
    writeFileSync(file, JSON.stringify([{ id: 'from-file', url: `${probe.url}/status` }]));
    const bin = alone(BIN);
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    start(bin, ['--http-address=127.0.0.1', `--http-port=${port}`, `--resources-file=${file}`, '--http-request-seconds=0.3'], {
      env: { PATH: '/nonexistent' },
      cwd: dir,
    });
    await waitForHttp(`${base}/healthz`);

    // Registering the probe's status URL through the API, as the README describes.
    const post = await fetch(`${base}/resources`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'probe', url: `${probe.url}/status` }),
    });
    expect(post.status).toBe(201);
    expect(await post.json()).toEqual({ resource: { id: 'probe', url: `${probe.url}/status` } });

    const entry = await waitFor(
      async () => {
        const doc = (await (await fetch(`${base}/responses/probe`)).json()) as { response: Record<string, Entry> };
        const e = doc.response.probe!;
        return e.json?.status.targets.every((t) => t.reason !== null) && e;
      },
      { timeoutMs: 10_000 },
    );
    expect(entry).toMatchObject({ url: `${probe.url}/status`, statusCode: 200 });
    expect(entry.json!.status.targets.map((t) => [t.url, t.reachable])).toEqual([
      [webUrl, true],
      [closedUrl, false],
    ]);
    const all = (await (await fetch(`${base}/responses`)).json()) as { responses: Record<string, Entry> };
    expect(Object.keys(all.responses)).toEqual(['from-file', 'probe']);
    expect(all.responses['from-file']!.json?.status.targets).toHaveLength(2);

    // Stopping the probe: its entry turns null (as in star) and its detail says why.
    await probe.proc.stop('SIGTERM');
    const failed = await waitFor(async () => {
      const doc = (await (await fetch(`${base}/responses/probe`)).json()) as {
        response: Record<string, Entry | null>;
        details: Record<string, { error: { reason: string } | null }>;
      };
      return doc.details.probe!.error?.reason === 'refused' && doc;
    });
    expect(failed.response.probe).toBeNull();

    // The UI comes from inside the executable (nothing lies beside it in its folder).
    const index = await fetch(`${base}/?example=true`);
    if (existsSync(join(UI, 'index.html'))) {
      expect(index.status).toBe(200);
      expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await index.text(), 'the executable embeds an older UI: run npm run build').toBe(readFileSync(join(UI, 'index.html'), 'utf8'));
      if (existsSync(join(UI, 'app.js'))) {
        const app = await fetch(`${base}/assets/app.js`);
        expect(app.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
        expect(await app.text(), 'the executable embeds an older UI: run npm run build').toBe(readFileSync(join(UI, 'app.js'), 'utf8'));
      }
    } else {
      expect(index.status).toBe(404);
      expect(((await index.json()) as { message: string }).message).toMatch(/web UI is not available/);
    }
    const example = (await (await fetch(`${base}/responses/example`)).json()) as { responses: Record<string, unknown> };
    expect(Object.keys(example.responses)).toEqual(['A', 'B', 'C', 'D', 'E']);
  });

  // The executable runs code that a warm-up compiled at build time (scripts/lib/warm-code-cache.ts):
  // each start must still be its own process, with its own flags, working directory and clock.
  it("each start is its own: pid, flags, working directory and time are this start's", async () => {
    const bin = alone(BIN);
    for (const id of ['first', 'second']) {
      const dir = tempDir('starmap-collector-');
      writeFileSync(join(dir, 'resources.json'), JSON.stringify([{ id, url: 'http://127.0.0.1:9/status' }]));
      const port = await freePort();
      const before = Date.now();
      const proc = start(bin, ['--http-address=127.0.0.1', `--http-port=${port}`, '--resources-file=resources.json', '--log-level=info'], { cwd: dir });
      await waitForHttp(`http://127.0.0.1:${port}/healthz`);
      const listening = await waitFor(() =>
        proc
          .output()
          .split('\n')
          .find((l) => l.includes('"collector listening"')),
      );
      const line = JSON.parse(listening) as { pid: number; time: string; url: string; resources: number };
      expect(line.pid).toBe(proc.child.pid);
      expect(line.url).toBe(`http://127.0.0.1:${port}`);
      expect(Date.parse(line.time)).toBeGreaterThanOrEqual(before - 1000);
      const doc = (await (await fetch(`http://127.0.0.1:${port}/resources`)).json()) as { resources: { id: string }[] };
      expect(doc.resources.map((r) => r.id)).toEqual([id]);
      // A route's schema is compiled on its first request (shared/http-server.ts): bad input still gets a 400.
      const bad = await fetch(`http://127.0.0.1:${port}/resources`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"id":7}' });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { message: string }).message).toMatch(/./);
      await proc.stop('SIGTERM');
    }
  });
});
