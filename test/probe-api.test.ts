// The probe end to end from source: /status in star's shape with the extra fields, reachability
// changes over time, /healthz, /metrics, JSON 404s and the log file.
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ProbeState } from '../probe/state.ts';
import { parseTarget } from '../shared/targets.ts';
import { blackhole } from './helpers/blackhole.ts';
import { dnsServer } from './helpers/dns.ts';
import { CLOSED_PORT, freePort, stopAll, tempDir } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const closers: (() => void)[] = [];
afterAll(async () => {
  closers.forEach((c) => c());
  await stopAll();
});

function tcpServer(port = 0): Promise<net.Server> {
  return new Promise((res, rej) => {
    const s = net.createServer((c) => c.destroy());
    s.once('error', rej);
    s.listen(port, '127.0.0.1', () => res(s));
  });
}

describe('probe /status', () => {
  it("reports every target in --urls order, star's fields first, with reasons", async () => {
    const open = await tcpServer();
    closers.push(() => open.close());
    const web = http.createServer((_q, r) => r.writeHead(500).end());
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    closers.push(() => web.close());
    const openPort = (open.address() as net.AddressInfo).port;
    const webPort = (web.address() as net.AddressInfo).port;
    const closed = CLOSED_PORT;
    const urls = [`http://127.0.0.1:${webPort}/status`, `127.0.0.1:${closed}`, `tcp://127.0.0.1:${openPort}`, 'http://no-such-host.invalid/'];
    // Names go to a DNS server of the test's own on loopback, which knows none.
    const dns = await dnsServer({});
    closers.push(dns.close);
    const probe = await startProbe([`--urls=${urls.join(',')}`, '--http-probe-seconds=0.2', '--timeout-seconds=2', `--dns-servers=${dns.server}`]);

    const targets = await waitFor(async () => {
      const t = await probe.status();
      return t.every((x) => x.checkedAt !== null) && t;
    });
    expect(targets.map((t) => t.url)).toEqual(urls);
    expect(Object.keys(targets[0]!).slice(0, 2)).toEqual(['reachable', 'url']);
    expect(targets.map((t) => [t.reachable, t.reason, t.statusCode])).toEqual([
      [true, 'ok', 500],
      [false, 'refused', null],
      [true, 'ok', null],
      [false, 'dns', null],
    ]);
    for (const t of targets) {
      expect(typeof t.latencyMs).toBe('number');
      expect(Date.parse(t.checkedAt!)).not.toBeNaN();
      expect(t.changedAt).not.toBeNull();
    }
    const res = await fetch(`${probe.url}/status`);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('says a target was not checked yet instead of pretending', async () => {
    const hole = await blackhole();
    closers.push(hole.close);
    const probe = await startProbe([`--urls=127.0.0.1:${hole.port}`, '--timeout-seconds=30']);
    const [t] = await probe.status();
    expect(t).toMatchObject({ reachable: false, checkedAt: null, changedAt: null, reason: null, latencyMs: null });
  });

  it('moves changedAt when a target goes down and comes back', async () => {
    let server = await tcpServer();
    const port = (server.address() as net.AddressInfo).port;
    closers.push(() => server.close());
    const probe = await startProbe([`--urls=127.0.0.1:${port}`, '--http-probe-seconds=0.1', '--timeout-seconds=0.5']);
    const up = await waitFor(async () => (await probe.status()).find((t) => t.reachable));
    await new Promise<void>((r) => server.close(() => r()));
    const down = await waitFor(async () => (await probe.status()).find((t) => !t.reachable && t.checkedAt !== null));
    expect(down.reason).toBe('refused');
    expect(Date.parse(down.changedAt!)).toBeGreaterThan(Date.parse(up.changedAt!));
    server = await tcpServer(port);
    const back = await waitFor(async () => (await probe.status()).find((t) => t.reachable));
    expect(Date.parse(back.changedAt!)).toBeGreaterThan(Date.parse(down.changedAt!));
    // While nothing flips, changedAt stays put even as checkedAt moves on.
    const later = await waitFor(async () => (await probe.status()).find((t) => Date.parse(t.checkedAt!) > Date.parse(back.checkedAt!)));
    expect(later.changedAt).toBe(back.changedAt);
  });

  it('a blackholed target never holds up the others beyond its own timeout', async () => {
    const holes = await Promise.all([blackhole(), blackhole(), blackhole()]);
    holes.forEach((h) => closers.push(h.close));
    const open = await tcpServer();
    closers.push(() => open.close());
    const openPort = (open.address() as net.AddressInfo).port;
    const urls = [...holes.map((h) => `127.0.0.1:${h.port}`), `127.0.0.1:${openPort}`];
    const probe = await startProbe([`--urls=${urls.join(',')}`, '--http-probe-seconds=0.5', '--timeout-seconds=2']);
    // The open target's answer is there while the blackholed checks are still waiting.
    const early = await waitFor(async () => {
      const t = await probe.status();
      return t[3]!.checkedAt !== null && t;
    });
    expect(early[3]).toMatchObject({ reachable: true, reason: 'ok' });
    expect(early.slice(0, 3).map((t) => t.checkedAt)).toEqual([null, null, null]);
    // The blackholed ones are reported as timeouts, each after its own deadline and not much later.
    const targets = await waitFor(
      async () => {
        const t = await probe.status();
        return t.every((x) => x.checkedAt !== null) && t;
      },
      { timeoutMs: 5000 },
    );
    for (const t of targets.slice(0, 3)) {
      expect(t.reason).toBe('timeout');
      expect(t.latencyMs).toBeGreaterThanOrEqual(1990);
      expect(t.latencyMs).toBeLessThan(2500);
    }
  });
});

describe('probe /status bytes', () => {
  it('are the statuses as JSON, rebuilt after each recorded result and reused until then', () => {
    const targets = ['127.0.0.1:1', 'http://127.0.0.1:2/x?é=1', '[::1]:3'].map((t) => parseTarget(t));
    const state = new ProbeState(targets);
    const expected = () => JSON.stringify({ status: { targets: state.statuses() } });
    expect(state.statusBody().toString('utf8')).toBe(expected());
    state.record(targets[1]!, {
      reachable: false,
      reason: 'timeout',
      message: 'no answer within 1000 ms — "quoted"',
      latencyMs: 1000.5,
      checkedAt: '2026-11-27T00:00:00.000Z',
    });
    const first = state.statusBody();
    expect(first.toString('utf8')).toBe(expected());
    expect(state.statusBody()).toBe(first);
    state.record(targets[0]!, { reachable: true, reason: 'ok', latencyMs: 0.2, checkedAt: '2026-11-27T00:00:01.000Z' });
    expect(state.statusBody()).not.toBe(first);
    expect(JSON.parse(state.statusBody().toString('utf8'))).toEqual({ status: { targets: state.statuses() } });
    expect(state.statusBody().toString('utf8')).toBe(expected());
  });

  it('while results stream in, are put together again at most every coalesceMs', () => {
    const targets = ['127.0.0.1:1', '127.0.0.1:2'].map((t) => parseTarget(t));
    const state = new ProbeState(targets, { coalesceMs: 200 });
    const first = state.statusBody(1000);
    state.record(targets[0]!, { reachable: true, reason: 'ok', latencyMs: 0.2, checkedAt: '2026-11-27T00:00:01.000Z' });
    expect(state.statusBody(1199)).toBe(first);
    const second = state.statusBody(1200);
    expect(second).not.toBe(first);
    expect(second.toString('utf8')).toBe(JSON.stringify({ status: { targets: state.statuses() } }));
    // Nothing changed since: the same bytes, however late.
    expect(state.statusBody(99_999)).toBe(second);
  });
});

describe('probe POST /cycle', () => {
  it('checks every target at once instead of at the next cycle; a result older than the recorded one is dropped', async () => {
    const open = await tcpServer();
    closers.push(() => open.close());
    const port = (open.address() as net.AddressInfo).port;
    // An interval of an hour: without the poke no second check would come within the test.
    const probe = await startProbe([`--urls=tcp://127.0.0.1:${port},127.0.0.1:${CLOSED_PORT}`, '--http-probe-seconds=3600', '--timeout-seconds=2']);
    const first = await waitFor(async () => {
      const t = await probe.status();
      return t.every((x) => x.checkedAt !== null) && t;
    });
    const pokedAt = Date.now();
    const res = await fetch(`${probe.url}/cycle`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ cycle: 'started' });
    const after = await waitFor(async () => {
      const t = await probe.status();
      return t.every((x) => Date.parse(x.checkedAt!) >= pokedAt) && t;
    });
    expect(after.map((t) => t.reachable)).toEqual([true, false]);
    expect(after.map((t) => t.checkedAt)).not.toEqual(first.map((t) => t.checkedAt));
    // The other methods on it are unknown routes, as before.
    expect((await fetch(`${probe.url}/cycle`)).status).toBe(404);
    // A page elsewhere cannot drive the checks: its Origin, or a browser's Sec-Fetch-Site, is refused.
    for (const headers of [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }]) {
      const refused = await fetch(`${probe.url}/cycle`, { method: 'POST', headers });
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: string }).error).toMatch(/^cross-site write refused: /);
    }
  });

  it('keeps the result of the check that started last', () => {
    const [target] = ['127.0.0.1:1'].map((t) => parseTarget(t));
    const state = new ProbeState([target!]);
    state.record(target!, { reachable: false, reason: 'timeout', latencyMs: 500, checkedAt: '2026-11-27T00:00:02.000Z' });
    // A check that started earlier (before a policy change) and ended later must not overwrite it.
    expect(state.record(target!, { reachable: true, reason: 'ok', latencyMs: 0.2, checkedAt: '2026-11-27T00:00:01.000Z' })).toBeUndefined();
    expect(state.statuses()[0]).toMatchObject({ reachable: false, checkedAt: '2026-11-27T00:00:02.000Z' });
  });
});

describe('probe side endpoints', () => {
  it('serves /healthz, Prometheus /metrics without stale series, and JSON 404s', async () => {
    const open = await tcpServer();
    closers.push(() => open.close());
    const port = (open.address() as net.AddressInfo).port;
    const probe = await startProbe([`--urls=127.0.0.1:${port}`, '--http-probe-seconds=0.2']);
    await waitFor(async () => (await probe.status())[0]!.reachable);

    const health = await (await fetch(`${probe.url}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', targets: 1 });

    const res = await fetch(`${probe.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await res.text();
    expect(text).toContain(`starmap_probe_target_reachable{target="127.0.0.1:${port}",kind="tcp"} 1`);
    expect(text).toMatch(new RegExp(`starmap_probe_target_latency_seconds\\{target="127.0.0.1:${port}"\\} [0-9.e-]+`));
    expect(text).toMatch(/starmap_probe_checks_total\{reason="ok"\} \d+/);

    const missing = await fetch(`${probe.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ message: 'not found: GET /nope' });
    const wrongMethod = await fetch(`${probe.url}/status`, { method: 'POST' });
    expect(wrongMethod.status).toBe(404);
    expect(((await wrongMethod.json()) as { message: string }).message).toMatch(/POST \/status/);
  });

  it('writes its log to --logfile and stops cleanly on SIGTERM', async () => {
    const dir = tempDir('starmap-probe-');
    const logfile = join(dir, 'sub', 'probe.log');
    const probe = await startProbe([`--urls=127.0.0.1:${await freePort()}`, `--logfile=${logfile}`]);
    expect(await probe.proc.stop('SIGTERM')).toBe(0);
    expect(existsSync(logfile)).toBe(true);
    const lines = readFileSync(logfile, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['probe listening', 'shutting down', 'stopped']));
    expect(probe.proc.output()).not.toContain('probe listening');
  });
});
