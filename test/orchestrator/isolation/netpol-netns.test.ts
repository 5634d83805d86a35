// Kubernetes NetworkPolicy on real packets: four pods (x/a, x/b, y/a, y/b) in their own network
// namespaces serving TCP and UDP on ports 80 and 81 (named serve-<port>-<protocol>), policies
// written through the real endpoints, and TCP connections and UDP datagrams sent from inside the
// namespaces. Needs root, iproute2 and nftables (run under flock /tmp/starmap-netns.lock).
// Prefix smnpe and subnet 10.213.124.0/24 are this file's only.
import { execFile } from 'node:child_process';
import { connect, createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Isolation, leftovers, policyPlugin } from '../../../orchestrator/isolation/index.ts';
import { NODE, start, stopAll, type Running } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const execFileAsync = promisify(execFile);
const PREFIX = 'smnpe';
const SUBNET = '10.213.124.0/24';
const skipReason = isolationSkip('isolation-netpol-netns');

// Serves TCP (writes "ok" and closes) and UDP (echoes) on the given ports of every address.
const SERVE = `const net=require('net'),dgram=require('dgram');const ports=process.argv.slice(1).map(Number);let n=0;const up=()=>{if(++n===ports.length*2)console.log('listening')};
for(const p of ports){net.createServer(s=>s.end('ok')).listen(p,'0.0.0.0',up);const u=dgram.createSocket('udp4');u.on('message',(m,r)=>u.send(m,r.port,r.address));u.bind(p,'0.0.0.0',up)}`;
// Tries every [host, port, proto] at once; prints a JSON array of "ok", "refused" or "timeout".
const PROBE = `const net=require('net'),dgram=require('dgram');const [list,t]=[JSON.parse(process.argv[1]),+process.argv[2]];
Promise.all(list.map(([h,p,proto])=>new Promise(res=>{const done=v=>{clearTimeout(timer);res(v)};const timer=setTimeout(()=>{try{s.destroy?.();s.close?.()}catch{};res('timeout')},t);let s;
if(proto==='TCP'){s=net.connect({host:h,port:p});s.on('data',()=>{s.destroy();done('ok')});s.on('error',e=>done(e.code==='ECONNREFUSED'?'refused':'error:'+e.code))}
else{s=dgram.createSocket('udp4');const nonce=String(Math.random());s.on('message',m=>{if(String(m)===nonce){s.close();done('ok')}});s.on('error',e=>{try{s.close()}catch{};done(e.code==='ECONNREFUSED'?'refused':'error:'+e.code)});s.connect(p,h,()=>s.send(nonce))}}))).then(r=>console.log(JSON.stringify(r)))`;

interface Pod {
  id: string;
  netns: string;
  ip: string;
  server: Running;
}

type Want = 'ok' | 'blocked';

const ECHO = `require('net').createServer(s=>s.pipe(s)).listen(+process.argv[1],'0.0.0.0',()=>console.log('listening'))`;
// Pushes a line "t" every 50 ms to whoever connects; READ prints what it receives and sends nothing.
const PUSH = `require('net').createServer(s=>{const t=setInterval(()=>s.write('t\\n'),50);s.on('error',()=>{});s.on('close',()=>clearInterval(t))}).listen(+process.argv[1],'0.0.0.0',()=>console.log('listening'))`;
const READ = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2]});s.on('data',d=>process.stdout.write(d));s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;
// Sends a numbered line every 50 ms on ONE connection and prints every echoed number.
const CHAT = `const s=require('net').connect({host:process.argv[1],port:+process.argv[2]});let n=0;s.on('connect',()=>setInterval(()=>s.write((n++)+'\\n'),50));s.on('data',d=>process.stdout.write(d));s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;

describe.skipIf(skipReason !== undefined)('NetworkPolicy on real packets (root)', () => {
  let iso: Isolation;
  let app: FastifyInstance;
  let host: Server;
  let hostPort: number;
  const pods = new Map<string, Pod>();
  let chatEchoes = () => 0;

  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: res.statusCode, body: res.json(), enforcement: res.headers['starmap-enforcement'] };
  };
  const change = async (body: unknown) => {
    const r = await call('POST', '/v2/starmap/changes', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.failed).toEqual([]);
    return r.body;
  };
  const netpol = (namespace: string, name: string, spec: unknown) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace },
    spec,
  });
  /** Back to no policies, no namespace labels, no replaced pod labels. */
  const reset = async () => {
    const ids = (await call('GET', '/v2/starmap/policies')).body.policies.map(
      (p: { metadata: { namespace: string; name: string } }) => `${p.metadata.namespace}/${p.metadata.name}`,
    );
    await change({ policies: { delete: ids }, namespaces: { x: null, y: null }, podLabels: Object.fromEntries([...pods.keys()].map((id) => [id, null])) });
  };

  /** One TCP connection from the host: "ok" when the server's answer arrives. */
  const fromHost = (ip: string, port: number) =>
    new Promise<string>((res) => {
      const c = connect({ host: ip, port });
      const t = setTimeout(() => (c.destroy(), res('timeout')), 2000);
      c.on('data', () => (clearTimeout(t), c.destroy(), res('ok')));
      c.on('error', (e: Error) => (clearTimeout(t), res(e.message)));
    });

  /** Probes from `from` (a pod id, or "host") to targets "ns/pod:port/PROTO" or "host:port/TCP" until every outcome is as wanted. */
  async function expectReach(from: string, want: Record<string, Want>): Promise<void> {
    const targets = Object.keys(want).map((k) => {
      const m = /^(.+):(\d+)\/(TCP|UDP)$/.exec(k)!;
      const ip = m[1] === 'host' ? iso.gateway : pods.get(m[1]!)!.ip;
      return [ip, Number(m[1] === 'host' ? hostPort : m[2]), m[3]] as const;
    });
    let last: string[] = [];
    await waitFor(
      async () => {
        // Bounded: a probe that never exits is killed and tried again, instead of holding the test.
        const { stdout } = await execFileAsync('ip', ['netns', 'exec', pods.get(from)!.netns, NODE, '-e', PROBE, JSON.stringify(targets), '500'], {
          timeout: 5000,
          killSignal: 'SIGKILL',
        });
        last = JSON.parse(stdout) as string[];
        return Object.values(want).every((w, i) => (w === 'ok' ? last[i] === 'ok' : last[i] === 'timeout'));
      },
      { timeoutMs: 10_000, intervalMs: 100, message: `from ${from}` },
    ).catch((err: Error) => {
      const got = Object.fromEntries(Object.entries(want).map(([k, w], i) => [k, `${w} → ${last[i]}`]));
      throw new Error(`${err.message}: ${JSON.stringify(got, null, 1)}`);
    });
  }

  beforeAll(async () => {
    iso = await Isolation.open({ prefix: PREFIX, subnet: SUBNET });
    app = Fastify();
    await app.register(policyPlugin, { engine: iso.engine });
    for (const ns of ['x', 'y']) {
      for (const name of ['a', 'b']) {
        const ports = [80, 81].flatMap((n) => ['tcp', 'udp'].map((protocol) => ({ number: n, name: `serve-${n}-${protocol}`, protocol })));
        const t = await iso.taskStarting({
          taskId: `${ns}${name}`,
          appId: `/np/${ns}/${name}`,
          labels: { 'starmap.namespace': ns, pod: name },
          groups: [],
          ports,
        });
        const server = start('ip', ['netns', 'exec', t.netns, NODE, '-e', SERVE, '80', '81']);
        pods.set(`${ns}/${name}`, { id: `${ns}/${name}`, netns: t.netns, ip: t.ip, server });
      }
    }
    for (const p of pods.values()) await waitFor(() => p.server.output().includes('listening'), { message: `servers of ${p.id}` });
    host = createServer((s) => s.end('ok'));
    await new Promise<void>((r) => host.listen(0, iso.gateway, r));
    hostPort = (host.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((r) => host?.close(r));
    await app?.close();
    await iso?.close();
    await stopAll();
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  });

  it('egress default deny: the pod reaches nobody (TCP, UDP, the host), others still reach it, and its open connection is cut', async () => {
    await reset();
    await expectReach('x/a', { 'x/b:80/TCP': 'ok', 'y/a:81/UDP': 'ok', 'host:0/TCP': 'ok' });
    const echo = start('ip', ['netns', 'exec', pods.get('x/b')!.netns, NODE, '-e', ECHO, '7070']);
    await waitFor(() => echo.output().includes('listening'), { message: 'echo server' });
    const chat = start('ip', ['netns', 'exec', pods.get('x/a')!.netns, NODE, '-e', CHAT, pods.get('x/b')!.ip, '7070']);
    chatEchoes = () =>
      chat
        .output()
        .split('\n')
        .filter((l) => /^\d+$/.test(l)).length;
    await waitFor(() => chatEchoes() > 3, { message: 'echoes over an open connection' });
    await change({ policies: { put: [netpol('x', 'deny-egress', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Egress'] })] } });
    await expectReach('x/a', { 'x/b:80/TCP': 'blocked', 'x/b:80/UDP': 'blocked', 'y/a:81/TCP': 'blocked', 'y/b:81/UDP': 'blocked', 'host:0/TCP': 'blocked' });
    await expectReach('x/b', { 'x/a:80/TCP': 'ok', 'x/a:81/UDP': 'ok' });
    // The host still gets in (health checks, the runner reading /status) and gets its answers.
    expect(await fromHost(pods.get('x/a')!.ip, 80)).toBe('ok');
    // A connection opened before the policy is cut too: its packets are checked on every packet.
    expect(chatEchoes()).toBeGreaterThan(0);
    const before = chatEchoes();
    await waitFor(async () => (await iso.engine.drops()).find((d) => d.pod === 'a' && d.namespace === 'x')!.egress.some((e) => e.port === 7070), {
      message: 'the open connection hits the egress drop rule',
    });
    expect(chatEchoes()).toBeLessThanOrEqual(before + 1);
    // Reaching the host takes a rule, as in Kubernetes (only the node's ingress is exempt).
    await change({
      policies: {
        put: [
          netpol('x', 'to-host', {
            podSelector: { matchLabels: { pod: 'a' } },
            policyTypes: ['Egress'],
            egress: [{ to: [{ ipBlock: { cidr: `${iso.gateway}/32` } }] }],
          }),
        ],
      },
    });
    await expectReach('x/a', { 'host:0/TCP': 'ok', 'x/b:80/TCP': 'blocked' });
    await chat.stop('SIGKILL');
    await echo.stop('SIGKILL');
    // Above the sum of its bounded waits (seven of up to 10 s each), so that a slow step fails with
    // its own message rather than with the test's timeout.
  }, 90_000);

  it('an open connection is judged by which side opened it, even when the other side sends first after the policy', async () => {
    await reset();
    // The servers push a line every 50 ms and the clients only read (and acknowledge): after the
    // policy, the first packet a namespace sees of each connection is the server's.
    const pushTo = (pod: string, port: number) => start('ip', ['netns', 'exec', pods.get(pod)!.netns, NODE, '-e', PUSH, String(port)]);
    const readFrom = (pod: string, server: string, port: number) =>
      start('ip', ['netns', 'exec', pods.get(pod)!.netns, NODE, '-e', READ, pods.get(server)!.ip, String(port)]);
    const servers = [pushTo('x/b', 7071), pushTo('x/a', 7072)];
    for (const srv of servers) await waitFor(() => srv.output().includes('listening'), { message: 'push servers' });
    const readers = [readFrom('x/a', 'x/b', 7071), readFrom('y/a', 'x/a', 7072)];
    for (const r of readers)
      await waitFor(
        () =>
          r
            .output()
            .split('\n')
            .filter((l) => l === 't').length > 3,
        { message: 'lines pushed over open connections' },
      );
    // x/a may neither open connections nor accept them.
    await change({ policies: { put: [netpol('x', 'deny-all', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Ingress', 'Egress'] })] } });
    // x/a opened the first: its acknowledgements are its egress, dropped. y/a opened the second:
    // its acknowledgements are x/a's ingress, dropped. Had x/a's namespace not tracked them from
    // their first packet, both would be taken for answers to the pushes, and pass.
    const xa = async () => (await iso.engine.drops()).find((d) => d.pod === 'a' && d.namespace === 'x')!;
    await waitFor(async () => (await xa()).egress.some((e) => e.port === 7071 && e.to === pods.get('x/b')!.ip), {
      message: 'x/a acknowledging x/b hits the egress drop rule',
    });
    await waitFor(async () => (await xa()).ingress.some((e) => e.port === 7072 && e.from === pods.get('y/a')!.ip), {
      message: 'y/a acknowledging x/a hits the ingress drop rule',
    });
    for (const r of [...readers, ...servers]) await r.stop('SIGKILL');
    // Above the sum of its bounded waits (six of up to 10 s each), as the test before.
  }, 90_000);

  it('egress to a namespace, to a pod, and to an ipBlock with except, on TCP and UDP', async () => {
    await reset();
    const eg = (name: string, to: unknown[]) => netpol('x', name, { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Egress'], egress: [{ to }] });
    await change({ policies: { put: [eg('to-y', [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } } }])] } });
    await expectReach('x/a', { 'y/a:80/TCP': 'ok', 'y/b:81/UDP': 'ok', 'x/b:80/TCP': 'blocked', 'x/b:80/UDP': 'blocked' });
    await change({ policies: { put: [eg('to-y', [{ podSelector: { matchLabels: { pod: 'b' } } }])] } });
    await expectReach('x/a', { 'x/b:80/TCP': 'ok', 'x/b:81/UDP': 'ok', 'y/a:80/TCP': 'blocked', 'y/b:80/TCP': 'blocked' });
    // The whole subnet but y/b; host bits in the CIDR are ignored, as in the v1 API.
    await change({ policies: { put: [eg('to-y', [{ ipBlock: { cidr: `${pods.get('y/a')!.ip}/24`, except: [`${pods.get('y/b')!.ip}/32`] } }])] } });
    await expectReach('x/a', { 'x/b:80/TCP': 'ok', 'y/a:81/UDP': 'ok', 'y/b:80/TCP': 'blocked', 'y/b:81/UDP': 'blocked', 'host:0/TCP': 'ok' });
  });

  it('ingress by named port (with its protocol), by port range, by protocol, and by ports of two protocols in one rule', async () => {
    await reset();
    const ing = (ports: unknown[]) => ({ policies: { put: [netpol('y', 'in', { podSelector: { matchLabels: { pod: 'b' } }, ingress: [{ ports }] })] } });
    await change(ing([{ port: 'serve-81-udp', protocol: 'UDP' }]));
    await expectReach('x/a', { 'y/b:81/UDP': 'ok', 'y/b:80/UDP': 'blocked', 'y/b:81/TCP': 'blocked', 'y/a:81/TCP': 'ok' });
    // A name nobody declares matches nothing (the pod stays isolated).
    await change(ing([{ port: 'serve-99-tcp' }]));
    await expectReach('x/a', { 'y/b:80/TCP': 'blocked', 'y/b:81/TCP': 'blocked' });
    await change(ing([{ port: 80, endPort: 81 }]));
    await expectReach('y/a', { 'y/b:80/TCP': 'ok', 'y/b:81/TCP': 'ok', 'y/b:80/UDP': 'blocked' });
    await change(ing([{ protocol: 'UDP' }]));
    await expectReach('y/a', { 'y/b:80/UDP': 'ok', 'y/b:81/UDP': 'ok', 'y/b:80/TCP': 'blocked' });
    // Ports of two protocols in one rule: one protocol . port set (render.ts), ranges included.
    await change(
      ing([
        { port: 80, protocol: 'TCP' },
        { port: 81, protocol: 'UDP' },
      ]),
    );
    await expectReach('y/a', { 'y/b:80/TCP': 'ok', 'y/b:81/UDP': 'ok', 'y/b:81/TCP': 'blocked', 'y/b:80/UDP': 'blocked' });
    await change(
      ing([
        { port: 80, endPort: 81, protocol: 'UDP' },
        { port: 81, protocol: 'TCP' },
      ]),
    );
    await expectReach('y/a', { 'y/b:80/UDP': 'ok', 'y/b:81/UDP': 'ok', 'y/b:81/TCP': 'ok', 'y/b:80/TCP': 'blocked' });
  });

  it('a connection needs both sides; the drop counters say which side dropped it', async () => {
    await reset();
    await change({
      policies: {
        put: [
          netpol('x', 'a-to-ya', {
            podSelector: { matchLabels: { pod: 'a' } },
            policyTypes: ['Egress'],
            egress: [{ to: [{ namespaceSelector: {}, podSelector: { matchLabels: { pod: 'a' } } }] }],
          }),
          netpol('y', 'ya-from-xb', {
            podSelector: { matchLabels: { pod: 'a' } },
            ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } }, podSelector: { matchLabels: { pod: 'b' } } }] }],
          }),
        ],
      },
    });
    // Counters only grow (and earlier tests dropped packets too): judge what this probe adds.
    type Drops = {
      namespace: string;
      pod: string;
      egress: { to: string; pod?: string; port: number; protocol: string; packets: number }[];
      ingress: { from: string; pod?: string; port: number; protocol: string; packets: number }[];
    }[];
    // One peer, port and protocol has an entry per set of isolating policies that dropped it (an
    // earlier test's policies among them): the packets of a cell are their sum.
    const counts = async () => {
      const m = new Map<string, number>();
      const add = (k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
      for (const t of (await call('GET', '/v2/starmap/drops')).body.tasks as Drops) {
        for (const e of t.egress) add(`${t.namespace}/${t.pod} egress to ${e.pod ?? e.to} ${e.port}/${e.protocol}`, e.packets);
        for (const e of t.ingress) add(`${t.namespace}/${t.pod} ingress from ${e.pod ?? e.from} ${e.port}/${e.protocol}`, e.packets);
      }
      return m;
    };
    const before = await counts();
    await expectReach('x/a', { 'y/a:80/TCP': 'blocked', 'y/b:81/UDP': 'blocked', 'y/b:80/TCP': 'blocked' });
    await expectReach('x/b', { 'y/a:80/TCP': 'ok' });
    const grown = async () =>
      [...(await counts())]
        .filter(([k, n]) => n > (before.get(k) ?? 0))
        .map(([k]) => k)
        .sort();
    // x/a → y/a: x/a's egress allowed it, y/a's ingress dropped it. x/a → y/b: dropped on the way
    // out (y/b never saw it). x/b → y/a: allowed by both.
    await waitFor(async () => (await grown()).length >= 3, { message: 'drop counters grow' });
    expect(await grown()).toEqual(['x/a egress to y/b 80/TCP', 'x/a egress to y/b 81/UDP', 'y/a ingress from x/a 80/TCP']);
    const ip = (id: string) => pods.get(id)!.ip;
    // The rules in force, both ways, as the network endpoint shows them.
    const net = (await call('GET', '/v2/starmap/network')).body.tasks;
    expect(net.find((t: { namespace: string; pod: string }) => t.namespace === 'x' && t.pod === 'a').egress).toEqual({
      isolated: true,
      rules: [{ origin: 'x/a-to-ya egress 0', peer: { pods: ['x/a', 'y/a'], ips: [ip('x/a'), ip('y/a')] }, ports: 'all' }],
    });
  });

  it('namespace labels and pod labels change what is allowed at once, without restarting the pods', async () => {
    await reset();
    const pids = [...pods.values()].map((p) => p.server.child.pid);
    await change({
      policies: {
        put: [
          netpol('y', 'from-blue', {
            podSelector: {},
            ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' } }, podSelector: { matchLabels: { role: 'client' } } }] }],
          }),
        ],
      },
    });
    await expectReach('x/a', { 'y/a:80/TCP': 'blocked', 'y/b:81/UDP': 'blocked' });
    await change({ namespaces: { x: { labels: { team: 'blue' } } }, podLabels: { 'x/a': { labels: { pod: 'a', role: 'client' } } } });
    await expectReach('x/a', { 'y/a:80/TCP': 'ok', 'y/b:81/UDP': 'ok' });
    await expectReach('x/b', { 'y/a:80/TCP': 'blocked' });
    // Through the single-purpose endpoints: x loses its label, then x/a gets its app labels back.
    expect((await call('PUT', '/v2/starmap/namespaces/x', { labels: { team: 'red' } })).status).toBe(200);
    await expectReach('x/a', { 'y/a:80/TCP': 'blocked' });
    expect((await call('PUT', '/v2/starmap/namespaces/x', { labels: { team: 'blue' } })).status).toBe(200);
    await expectReach('x/a', { 'y/a:80/TCP': 'ok' });
    expect((await call('DELETE', '/v2/starmap/pods/x/a/labels')).status).toBe(200);
    await expectReach('x/a', { 'y/a:80/TCP': 'blocked' });
    expect([...pods.values()].map((p) => p.server.child.pid)).toEqual(pids);
    expect([...pods.values()].every((p) => p.server.child.exitCode === null)).toBe(true);
  });
});
