// The admin tiers on real packets: three pods (x/a, y/a, y/b) in their own network namespaces
// serving TCP and UDP on port 80, ClusterNetworkPolicies written through the real endpoints, and
// connections sent from inside the namespaces. A Deny must be a drop (the client times out), never
// a refusal: upstream's conformance suite requires it. Needs root, iproute2 and nftables (run
// under flock /tmp/starmap-netns.lock). Prefix smtr and subnet 10.213.153.0/24 are this file's only.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Isolation, leftovers, policyPlugin } from '../../../orchestrator/isolation/index.ts';
import { NODE, start, stopAll, type Running } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const execFileAsync = promisify(execFile);
const PREFIX = 'smtr';
const SUBNET = '10.213.153.0/24';
const skipReason = isolationSkip('tiers-netns');

// Serves TCP (writes "ok" and closes) and UDP (echoes) on port 80; nothing listens on 81.
const SERVE = `const net=require('net'),dgram=require('dgram');let n=0;const up=()=>{if(++n===2)console.log('listening')};
net.createServer(s=>s.end('ok')).listen(80,'0.0.0.0',up);const u=dgram.createSocket('udp4');u.on('message',(m,r)=>u.send(m,r.port,r.address));u.bind(80,'0.0.0.0',up)`;
// Tries every [host, port, proto] at once; prints a JSON array of "ok", "refused" or "timeout".
const PROBE = `const net=require('net'),dgram=require('dgram');const [list,t]=[JSON.parse(process.argv[1]),+process.argv[2]];
Promise.all(list.map(([h,p,proto])=>new Promise(res=>{const done=v=>{clearTimeout(timer);res(v)};const timer=setTimeout(()=>{try{s.destroy?.();s.close?.()}catch{};res('timeout')},t);let s;
if(proto==='TCP'){s=net.connect({host:h,port:p});s.on('data',()=>{s.destroy();done('ok')});s.on('error',e=>done(e.code==='ECONNREFUSED'?'refused':'error:'+e.code))}
else{s=dgram.createSocket('udp4');const nonce=String(Math.random());s.on('message',m=>{if(String(m)===nonce){s.close();done('ok')}});s.on('error',e=>{try{s.close()}catch{};done(e.code==='ECONNREFUSED'?'refused':'error:'+e.code)});s.connect(p,h,()=>s.send(nonce))}}))).then(r=>console.log(JSON.stringify(r)))`;

type Outcome = 'ok' | 'refused' | 'timeout';

const cnp = (name: string, tier: 'Admin' | 'Baseline', priority: number, spec: Record<string, unknown>) => ({
  apiVersion: 'policy.networking.k8s.io/v1alpha2',
  kind: 'ClusterNetworkPolicy',
  metadata: { name },
  spec: { tier, priority, subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } } }, ...spec },
});
const FROM_X = [{ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } }];

describe.skipIf(skipReason !== undefined)('admin tiers on real packets (root)', () => {
  let iso: Isolation;
  let app: FastifyInstance;
  const pods = new Map<string, { netns: string; ip: string; server: Running }>();

  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown) => {
    const res = await app.inject({ method, url, ...(payload !== undefined ? { payload: payload as object } : {}) });
    return { status: res.statusCode, body: res.json() };
  };
  const change = async (body: unknown) => {
    const r = await call('POST', '/v2/starmap/changes', body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.failed).toEqual([]);
  };
  const reset = async () => {
    const ids = [...(await call('GET', '/v2/starmap/clusternetworkpolicies')).body.items.map((d: { metadata: { name: string } }) => `cnp/${d.metadata.name}`)];
    const nps = (await call('GET', '/v2/starmap/policies')).body.policies.map(
      (p: { metadata: { namespace: string; name: string } }) => `${p.metadata.namespace}/${p.metadata.name}`,
    );
    await change({ policies: { delete: nps }, clusterPolicies: { delete: ids } });
  };

  /** Probes from `from` until every target ("ns/pod:port/PROTO") has the wanted outcome. */
  async function expectOutcomes(from: string, want: Record<string, Outcome>): Promise<void> {
    const targets = Object.keys(want).map((k) => {
      const m = /^(.+):(\d+)\/(TCP|UDP)$/.exec(k)!;
      return [pods.get(m[1]!)!.ip, Number(m[2]), m[3]] as const;
    });
    let last: string[] = [];
    await waitFor(
      async () => {
        const { stdout } = await execFileAsync('ip', ['netns', 'exec', pods.get(from)!.netns, NODE, '-e', PROBE, JSON.stringify(targets), '700'], {
          timeout: 5000,
          killSignal: 'SIGKILL',
        });
        last = JSON.parse(stdout) as string[];
        return Object.values(want).every((w, i) => last[i] === w);
      },
      { timeoutMs: 10_000, intervalMs: 100, message: `from ${from}` },
    ).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(Object.fromEntries(Object.entries(want).map(([k, w], i) => [k, `${w} → ${last[i]}`])))}`);
    });
  }

  beforeAll(async () => {
    iso = await Isolation.open({ prefix: PREFIX, subnet: SUBNET });
    app = Fastify();
    await app.register(policyPlugin, { engine: iso.engine });
    for (const [ns, name] of [
      ['x', 'a'],
      ['y', 'a'],
      ['y', 'b'],
    ] as const) {
      const t = await iso.taskStarting({
        taskId: `${ns}${name}`,
        appId: `/tr/${ns}/${name}`,
        labels: { 'starmap.namespace': ns, pod: name },
        groups: [],
        ports: ['tcp', 'udp'].map((protocol) => ({ number: 80, name: `web-${protocol}`, protocol })),
      });
      const server = start('ip', ['netns', 'exec', t.netns, NODE, '-e', SERVE]);
      pods.set(`${ns}/${name}`, { netns: t.netns, ip: t.ip, server });
    }
    for (const [id, p] of pods) await waitFor(() => p.server.output().includes('listening'), { message: `servers of ${id}` });
  });

  afterAll(async () => {
    await app?.close();
    await iso?.close();
    await stopAll();
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  });

  it('an Admin Deny is a drop: the client times out where it was answered or refused before, and the drop is counted under the rule', async () => {
    await reset();
    // Before: served, and a port nobody serves is refused (so a refusal is what the probe would see).
    await expectOutcomes('x/a', { 'y/a:80/TCP': 'ok', 'y/a:80/UDP': 'ok', 'y/a:81/TCP': 'refused' });
    await change({ clusterPolicies: { put: [cnp('deny-x', 'Admin', 10, { ingress: [{ action: 'Deny', from: FROM_X }] })] } });
    await expectOutcomes('x/a', { 'y/a:80/TCP': 'timeout', 'y/a:80/UDP': 'timeout', 'y/a:81/TCP': 'timeout' });
    // The rule names x only: y/b still reaches y/a.
    await expectOutcomes('y/b', { 'y/a:80/TCP': 'ok' });
    const drops = (await iso.engine.drops()).find((d) => d.namespace === 'y' && d.pod === 'a')!;
    expect(drops.ingress.filter((e) => e.from === pods.get('x/a')!.ip && e.port === 80 && e.protocol.toLowerCase() === 'tcp')).toEqual([
      expect.objectContaining({ policies: ['Admin cnp/deny-x ingress rule 0'] }),
    ]);
  }, 60_000);

  it('Pass goes to the NetworkPolicy section, then the Baseline tier; an Accept wins over a NetworkPolicy', async () => {
    await reset();
    await change({
      clusterPolicies: {
        put: [
          cnp('pass-x', 'Admin', 10, { ingress: [{ action: 'Pass', from: FROM_X }] }),
          cnp('deny-later', 'Admin', 20, { ingress: [{ action: 'Deny', from: FROM_X }] }),
          cnp('baseline', 'Baseline', 10, { ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] }),
        ],
      },
    });
    // No NetworkPolicy isolates y/a: the Baseline Deny decides (a drop).
    await expectOutcomes('x/a', { 'y/a:80/TCP': 'timeout', 'y/a:80/UDP': 'timeout' });
    await expectOutcomes('y/b', { 'y/a:80/TCP': 'timeout' });
    // A NetworkPolicy allowing x: the Pass reaches it, the later Admin Deny is skipped.
    const allowX = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'allow-x', namespace: 'y' },
      spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } }] }] },
    };
    await change({ policies: { put: [allowX] } });
    await expectOutcomes('x/a', { 'y/a:80/TCP': 'ok', 'y/a:80/UDP': 'ok' });
    // y/b is not allowed by the NetworkPolicy that now isolates y/a (the Baseline is not reached).
    await expectOutcomes('y/b', { 'y/a:80/TCP': 'timeout' });
    // An Admin Accept before everything lets y/b in despite the NetworkPolicy.
    const fromY = [{ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } } }];
    await change({ clusterPolicies: { put: [cnp('accept-y', 'Admin', 1, { ingress: [{ action: 'Accept', from: fromY }] })] } });
    await expectOutcomes('y/b', { 'y/a:80/TCP': 'ok' });
  }, 90_000);

  it('egress: an Admin Deny to networks drops the subject’s connections, on the port it names only', async () => {
    await reset();
    const ya = pods.get('y/a')!.ip;
    await change({
      clusterPolicies: {
        put: [
          cnp('deny-net', 'Admin', 10, {
            subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'x' } } },
            egress: [{ action: 'Deny', to: [{ networks: [`${ya}/32`] }], protocols: [{ udp: { destinationPort: { number: 80 } } }] }],
          }),
        ],
      },
    });
    await expectOutcomes('x/a', { 'y/a:80/UDP': 'timeout', 'y/a:80/TCP': 'ok', 'y/b:80/UDP': 'ok' });
  }, 60_000);
});
