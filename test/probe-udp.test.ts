// UDP probing and serving with real sockets on loopback: the echo check's four outcomes (echo with
// the nonce, ICMP port unreachable, silence, an answer without the nonce), many targets at once,
// and the probe's --serve ports checked by another probe through /status and /metrics; and no echo
// loop between two probes serving the same ports, started by one forged datagram (in a network
// namespace of the test's own, where nftables forges the source port and counts the datagrams).
import { execFile, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { checkUdp } from '../shared/checks.ts';
import { parseTarget } from '../shared/targets.ts';
import { loopGuard, parseServeList } from '../probe/serve.ts';
import { isolationSkip } from './helpers/isolation.ts';
import { NODE, freePort, runToEnd, start, stopAll } from './helpers/process.ts';
import { startProbe } from './helpers/probe.ts';
import { waitFor } from './helpers/wait.ts';

const execFileAsync = promisify(execFile);

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

describe('no echo loop between probes serving the same UDP ports', () => {
  it('does not answer datagrams from a served or a privileged port, and answers ephemeral ones', () => {
    const mayLoop = loopGuard(parseServeList('80/udp,81/udp,8080/tcp,40000/udp'));
    expect([80, 81, 53, 1, 1023, 40000].filter(mayLoop)).toEqual([80, 81, 53, 1, 1023, 40000]);
    // 8080 is served over TCP only: a UDP datagram from it is no echo of ours.
    expect([1024, 8080, 32768, 45000, 60999, 65535].filter(mayLoop)).toEqual([]);
  });

  const skip = isolationSkip('probe-udp');
  const NS = `smudp-${process.pid}`;
  const [SERVED_A, SERVED_B, FORGER] = [8081, 8082, 7777];
  const nsExec = (args: string[]) => execFileSync('ip', ['netns', 'exec', NS, ...args], { encoding: 'utf8' });
  const nsNode = async (script: string, ...args: string[]) =>
    (await execFileAsync('ip', ['netns', 'exec', NS, NODE, '-e', script, ...args], { encoding: 'utf8' })).stdout;
  const nsGet = (url: string) => nsNode('fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(t))', url);
  /** Datagrams between two served ports, as the namespace's kernel counted them. */
  const loopDatagrams = () => {
    const listed = JSON.parse(nsExec(['nft', '-j', 'list', 'counter', 'ip', 'starmap_udp_loop', 'between_served'])) as {
      nftables: { counter?: { packets: number } }[];
    };
    return listed.nftables.find((e) => e.counter)!.counter!.packets;
  };
  const dropped = (metrics: string) => Number(/starmap_probe_served_udp_datagrams_total\{outcome="dropped-loop"\} (\d+)/.exec(metrics)?.[1] ?? 0);

  afterAll(async () => {
    await stopAll();
    if (!skip) execFileSync('ip', ['netns', 'del', NS], { stdio: 'ignore' });
  });

  it.skipIf(skip)("one datagram forged from one probe's served port to the other's is not echoed back and forth; their checks of each other pass", async () => {
    execFileSync('ip', ['netns', 'add', NS]);
    nsExec(['ip', 'link', 'set', 'lo', 'up']);
    // The forger sends from 127.0.0.3:7777 (its own socket) and the kernel rewrites the source
    // port to 8082, which probe B holds on 127.0.0.3: to probe A the datagram comes from B's
    // served port. Every datagram from one served port to another is counted on the way in.
    const rules = `table ip starmap_udp_loop {
      counter between_served {}
      chain out { type filter hook output priority -150; policy accept; ip saddr 127.0.0.3 udp sport ${FORGER} udp sport set ${SERVED_B}; }
      chain in { type filter hook input priority 0; policy accept; udp sport { ${SERVED_A}, ${SERVED_B} } udp dport { ${SERVED_A}, ${SERVED_B} } counter name between_served; }
    }`;
    execFileSync('ip', ['netns', 'exec', NS, 'nft', '-f', '-'], { input: rules });
    const serve = `--serve=${SERVED_A}/udp,${SERVED_B}/udp`;
    const probe = (address: string, peer: string) =>
      start('ip', [
        'netns', 'exec', NS, NODE, 'probe/main.ts', `--http-address=${address}`, '--http-port=9000', serve,
        `--urls=udp://${peer}:${SERVED_A},udp://${peer}:${SERVED_B}`, '--http-probe-seconds=0.2', '--timeout-seconds=1',
      ]); // prettier-ignore
    const procs = [probe('127.0.0.2', '127.0.0.3'), probe('127.0.0.3', '127.0.0.2')];
    const statusOf = async (address: string) =>
      (JSON.parse(await nsGet(`http://${address}:9000/status`)) as { status: { targets: { url: string; reason: string | null }[] } }).status.targets;
    // Both probes check each other's UDP ports from ephemeral ports, and are answered. A check
    // made before the peer had bound its ports is rightly `refused` (the first probe starts
    // checking before the second is up), so the answer looked at is one made once both serve.
    for (const [address, peer] of [
      ['127.0.0.2', '127.0.0.3'],
      ['127.0.0.3', '127.0.0.2'],
    ] as const) {
      const targets = await waitFor(async () => {
        const t = await statusOf(address);
        return t.every((x) => x.reason === 'ok') && t;
      }, { timeoutMs: 20_000, message: `probe ${address} reaches its peer (${procs.map((p) => p.output()).join('')})` }); // prettier-ignore
      expect(targets.map((t) => [t.url, t.reason])).toEqual([
        [`udp://${peer}:${SERVED_A}`, 'ok'],
        [`udp://${peer}:${SERVED_B}`, 'ok'],
      ]);
    }
    expect(loopDatagrams()).toBe(0);

    await nsNode(
      `const s = require('node:dgram').createSocket('udp4');
       s.bind(${FORGER}, '127.0.0.3', () => s.send('forged', ${SERVED_A}, '127.0.0.2', () => s.close()));`,
    );
    // Probe A dropped it: nothing went back to B, so there is no loop to wait out.
    await waitFor(async () => dropped(await nsGet('http://127.0.0.2:9000/metrics')) === 1, {
      timeoutMs: 5000,
      message: `probe A drops the forged datagram (${loopDatagrams()} datagrams between served ports so far)`,
    });
    expect(loopDatagrams()).toBe(1);
    // A privileged source port (as inetd) is not answered either: from 127.0.0.4:53.
    await nsNode(
      `const s = require('node:dgram').createSocket('udp4');
       s.bind(53, '127.0.0.4', () => s.send('from 53', ${SERVED_B}, '127.0.0.3', () => s.close()));`,
    );
    await waitFor(async () => dropped(await nsGet('http://127.0.0.3:9000/metrics')) === 1, { timeoutMs: 5000 });
    // The checks keep passing, echoed as before.
    const metrics = await nsGet('http://127.0.0.2:9000/metrics');
    expect(metrics).toMatch(/starmap_probe_served_udp_datagrams_total\{outcome="echoed"\} [1-9]/);
    expect((await statusOf('127.0.0.2')).map((t) => t.reason)).toEqual(['ok', 'ok']);
    expect(loopDatagrams()).toBe(1);
  });
});
