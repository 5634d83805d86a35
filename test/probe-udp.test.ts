// UDP probing and serving with real sockets on loopback: the echo check's four outcomes (echo with
// the nonce, ICMP port unreachable, silence, an answer without the nonce), many targets at once,
// and the probe's --serve ports checked by another probe through /status and /metrics.
import dgram from 'node:dgram';
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { checkUdp } from '../shared/checks.ts';
import { parseTarget } from '../shared/targets.ts';
import { parseServeList } from '../probe/serve.ts';
import { NODE, freePort, runToEnd, stopAll } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const sockets: dgram.Socket[] = [];
afterAll(async () => {
  for (const s of sockets) s.close();
  await stopAll();
});

/** A UDP socket on loopback that answers each datagram with `answer(msg)` (or not at all). */
async function udpServer(answer: (msg: Buffer) => Buffer | undefined): Promise<number> {
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, from) => {
    const reply = answer(msg);
    if (reply) s.send(reply, from.port, from.address);
  });
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  sockets.push(s);
  return s.address().port;
}

/** A UDP port nothing listens on: bound once to learn a free number, then closed. */
async function closedUdpPort(): Promise<number> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(r));
  return port;
}

const echo = (msg: Buffer) => msg;
const opts = { timeoutMs: 400 };

describe('UDP echo check', () => {
  it('is reachable when the echo carries the nonce back', async () => {
    const port = await udpServer(echo);
    const r = await checkUdp({ host: '127.0.0.1', port }, opts);
    expect(r).toMatchObject({ reachable: true, reason: 'ok' });
    expect(r.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it('is refused when the port answers ICMP port unreachable', async () => {
    const r = await checkUdp({ host: '127.0.0.1', port: await closedUdpPort() }, opts);
    expect(r).toMatchObject({ reachable: false, reason: 'refused' });
    expect(r.message).toMatch(/ECONNREFUSED/);
  });

  it('times out on silence, as a policy drop looks', async () => {
    const port = await udpServer(() => undefined);
    const r = await checkUdp({ host: '127.0.0.1', port }, opts);
    expect(r).toMatchObject({ reachable: false, reason: 'timeout', message: 'no echo within 400 ms' });
  });

  it('does not count an answer without its nonce (not an echo service)', async () => {
    let seen = 0;
    const port = await udpServer((msg) => {
      seen++;
      return Buffer.from(msg.toString('latin1').replace(/[0-9a-f]/g, '0'));
    });
    const r = await checkUdp({ host: '127.0.0.1', port }, opts);
    expect(seen).toBe(1);
    expect(r).toMatchObject({ reachable: false, reason: 'error' });
    expect(r.message).toMatch(/without this check's nonce.*not an echo service/);
  });

  it('checks many targets at once, each with its own outcome', async () => {
    const open = await udpServer(echo);
    const silent = await udpServer(() => undefined);
    const closed = await closedUdpPort();
    const ports = Array.from({ length: 300 }, (_v, i) => [open, closed, silent][i % 3]!);
    const results = await Promise.all(ports.map((port) => checkUdp({ host: '127.0.0.1', port }, { timeoutMs: 1500 })));
    expect(results.map((r) => r.reason)).toEqual(ports.map((p) => (p === open ? 'ok' : p === closed ? 'refused' : 'timeout')));
  });

  it('works over IPv6 too', async () => {
    const s = dgram.createSocket('udp6');
    s.on('message', (msg, from) => s.send(msg, from.port, from.address));
    await new Promise<void>((r) => s.bind(0, '::1', r));
    sockets.push(s);
    expect(await checkUdp(parseTarget(`udp://[::1]:${s.address().port}`), opts)).toMatchObject({ reachable: true, reason: 'ok' });
  });
});

describe('udp:// and sctp:// targets', () => {
  it('parses udp:// as its own kind and refuses sctp:// with the reason', () => {
    expect(parseTarget('udp://backend:53')).toMatchObject({ kind: 'udp', host: 'backend', port: 53, url: 'udp://backend:53' });
    expect(parseTarget('UDP://[::1]:53')).toMatchObject({ kind: 'udp', host: '::1' });
    expect(() => parseTarget('udp://a:53/x')).toThrow(/udp:\/\/ target takes no path/);
    expect(() => parseTarget('sctp://a:80')).toThrow(/SCTP cannot be probed: Node.js has no SCTP sockets/);
  });

  it('reads --serve lists: case-insensitive, bare ports are TCP, duplicates fold', () => {
    expect(parseServeList('80/tcp,80/UDP, 81 ,80/Tcp,')).toEqual([
      { port: 80, protocol: 'tcp' },
      { port: 80, protocol: 'udp' },
      { port: 81, protocol: 'tcp' },
    ]);
  });
});

describe('probe with --serve and udp:// targets', () => {
  it('serves TCP (accept and close) and UDP (echo), and another probe reports them in /status and /metrics', async () => {
    const served = await freePort();
    const closed = await closedUdpPort();
    const server = await startProbe([`--urls=127.0.0.1:1`, `--serve=${served}/tcp,${served}/udp`]);
    const urls = [`udp://127.0.0.1:${served}`, `tcp://127.0.0.1:${served}`, `udp://127.0.0.1:${closed}`];
    const client = await startProbe([`--urls=${urls.join(',')}`, '--http-probe-seconds=0.2', '--timeout-seconds=1']);
    const targets = await waitFor(async () => {
      const t = await client.status();
      return t.every((x) => x.checkedAt !== null) && t;
    });
    expect(targets.map((t) => [t.url, t.reachable, t.reason])).toEqual([
      [urls[0], true, 'ok'],
      [urls[1], true, 'ok'],
      [urls[2], false, 'refused'],
    ]);
    // The same fields as a TCP target, in the same order.
    expect(Object.keys(targets[0]!)).toEqual(Object.keys(targets[1]!));
    expect(targets[0]!.statusCode).toBeNull();
    const metrics = await (await fetch(`${client.url}/metrics`)).text();
    expect(metrics).toContain(`starmap_probe_target_reachable{target="${urls[0]}",kind="udp"} 1`);
    expect(metrics).toContain(`starmap_probe_target_reachable{target="${urls[2]}",kind="udp"} 0`);
    // The TCP port closes at once: a client sees the connection end without any data.
    const data = await new Promise<string>((resolve, reject) => {
      let got = '';
      const c = net.connect(served, '127.0.0.1');
      c.on('data', (d) => (got += d.toString()));
      c.on('close', () => resolve(got));
      c.on('error', reject);
    });
    expect(data).toBe('');
    await server.proc.stop();
  });

  it.each([
    [['--serve=80/sctp'], /--serve.*SCTP cannot be served/],
    [['--serve=80/icmp'], /--serve.*"80\/icmp".*not tcp or udp/],
    [['--serve=0/tcp'], /--serve.*outside 1-65535/],
    [['--serve=http'], /--serve.*not port\/protocol/],
    [['--serve='], /--serve/],
    [['--urls=sctp://a:80'], /--urls.*SCTP cannot be probed/],
  ])('%j exits 2 naming the flag', async (args, pattern) => {
    const { code, output } = await runToEnd(NODE, ['probe/main.ts', ...(args[0]!.startsWith('--urls') ? [] : ['--urls=a:1']), ...args]);
    expect(code).toBe(2);
    expect(output).toMatch(pattern);
  });

  it('a --serve port already in use exits 1 naming it', async () => {
    const taken = dgram.createSocket('udp4');
    await new Promise<void>((r) => taken.bind(0, '127.0.0.1', r));
    sockets.push(taken);
    const port = taken.address().port;
    const httpPort = await freePort();
    const { code, output } = await runToEnd(NODE, [
      'probe/main.ts',
      '--urls=127.0.0.1:1',
      '--http-address=127.0.0.1',
      `--http-port=${httpPort}`,
      `--serve=${port}/udp`,
    ]);
    expect(code).toBe(1);
    expect(output).toMatch(new RegExp(`cannot serve --serve=${port}/udp: EADDRINUSE`));
  });
});
