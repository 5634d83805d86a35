// Externals on packets (issue 29): a host outside the cluster is a namespace of its own with its
// address (here TEST-NET-1), reached from veth to veth over the bridge only. Proved with real
// namespaces and TCP: both ends see the other's real address, the host's forward and postrouting
// hooks never see a packet for it (an nft counting table of this test's own), nothing answers once
// it is gone, and nothing is left behind. Then a whole `scenario run --isolation=netns` of
// examples/externals: an egress ipBlock with an except and an ingress ipBlock, every external cell
// observed as computed. And through the orchestrator program: an external, a pod it reaches and a pod a
// policy keeps from it, answering the same way after kill -9 and a start on the same state dir.
// Needs root, iproute2 and nftables. Prefixes smx6/smx6b/smx6r, subnets 10.214.6-8.0/24 are this file's only.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TaskNetwork } from '../../../orchestrator/isolation/netns.ts';
import type { ScenarioReportDoc } from '../../../scenarios/report/results.ts';
import { isolationSkip, isolationLeftovers } from '../../helpers/isolation.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, runToEnd, start, stopAll, tempDir, type Running } from '../../helpers/process.ts';
import { waitFor } from '../../helpers/wait.ts';

const skipReason = isolationSkip('isolation-externals');
const NET_PREFIX = 'smx6b';
const NET_SUBNET = '10.214.7.0/24';
const RUN_PREFIX = 'smx6';
const RUN_SUBNET = '10.214.6.0/24';
const EXTERNAL = '192.0.2.77';
const RESTART_PREFIX = 'smx6r';
const RESTART_SUBNET = '10.214.8.0/24';

afterAll(stopAll);

const sh = (cmd: string) => execFileSync('sh', ['-c', cmd], { encoding: 'utf8' });

/** Namespaces, links, nft tables and routes of a prefix or a subnet still on the machine. */

// Replies with the address it sees the connection come from.
const SERVER = `const net=require('net');net.createServer(s=>s.end(s.remoteAddress)).listen(+process.argv[1],'0.0.0.0',()=>console.log('listening'))`;
const CLIENT = `const net=require('net');const [h,p]=process.argv.slice(1);const s=net.connect({host:h,port:+p});setTimeout(()=>{console.log('timeout');process.exit(0)},3000);let d='';s.on('data',x=>d+=x);s.on('end',()=>{console.log('ok:'+d);process.exit(0)});s.on('error',e=>{console.log('error:'+e.code);process.exit(0)})`;

async function serve(ns: string, port: number): Promise<Running> {
  const r = start('ip', ['netns', 'exec', ns, NODE, '-e', SERVER, String(port)]);
  await waitFor(() => r.output().includes('listening'), { message: `server in ${ns}:${port}` });
  return r;
}

/** `connect` that gives up on a namespace gone meanwhile (a task replaced) instead of throwing. */
const tryConnect = (ns: string, ip: string, port: number): string => {
  try {
    return connect(ns, ip, port);
  } catch {
    return 'error:no-namespace';
  }
};

const connect = (ns: string, ip: string, port: number) => sh(`ip netns exec ${ns} ${NODE} -e "${CLIENT.replace(/"/g, '\\"')}" ${ip} ${port}`).trim();

/**
 * Packets for or from the external the host's forward and postrouting hooks saw leaving by an
 * interface other than the bridge (this test's own table). With br_netfilter loaded the hooks also
 * see the bridged frames, whose way out is the bridge itself: those stay on the bridge.
 */
function hostCounts(table: string): number[] {
  const out = sh(`nft list table inet ${table}`);
  return [...out.matchAll(/counter packets (\d+)/g)].map((m) => Number(m[1]));
}

describe.skipIf(skipReason !== undefined)('externals on packets', () => {
  it('pod ↔ external over the bridge only: real addresses both ways, never forwarded or routed by the host, dead once gone, nothing left', async () => {
    const net = new TaskNetwork({ prefix: NET_PREFIX, subnet: NET_SUBNET });
    const table = `${NET_PREFIX}_count`; // owned by the prefix: the network's cleanup removes it too
    try {
      await net.start();
      sh(
        `nft -f - <<'EOF'
table inet ${table} {
  chain seen_forward { type filter hook forward priority -300; policy accept; ip daddr ${EXTERNAL} oifname != "${net.bridge}" counter; ip saddr ${EXTERNAL} oifname != "${net.bridge}" counter; }
  chain seen_postrouting { type filter hook postrouting priority -300; policy accept; ip daddr ${EXTERNAL} oifname != "${net.bridge}" counter; ip saddr ${EXTERNAL} oifname != "${net.bridge}" counter; }
}
EOF`,
      );
      const pod = await net.attachTask('pod-1');
      expect(net.externalProblem('10.214.7.9')).toMatch(/inside the task subnet/);
      expect(net.externalProblem('127.0.0.1')).toMatch(/not a unicast host address/);
      const ext = await net.attachTask('ext-1', { external: EXTERNAL });
      await expect(net.attachTask('ext-2', { external: EXTERNAL })).rejects.toThrow(/already task ext-1's/);
      const later = await net.attachTask('pod-2'); // a pod attached after the external gets its route too
      expect(sh(`ip -n ${pod.netns} route show ${EXTERNAL}`)).toMatch(new RegExp(`${EXTERNAL.replace(/\./g, '\\.')} dev eth0 scope link`));
      expect(sh(`ip -n ${later.netns} route show ${EXTERNAL}`)).toContain('dev eth0 scope link');
      expect(sh(`ip route get ${EXTERNAL} 2>&1 || true`)).not.toContain(NET_PREFIX); // the host has no route to it over the bridge

      const outside = await serve(ext.netns, 80);
      const inside = await serve(pod.netns, 8080);
      expect(connect(pod.netns, EXTERNAL, 80)).toBe(`ok:${pod.ip}`); // egress: the external sees the pod's address
      expect(connect(later.netns, EXTERNAL, 80)).toBe(`ok:${later.ip}`);
      expect(connect(ext.netns, pod.ip, 8080)).toBe(`ok:${EXTERNAL}`); // ingress: the pod sees the external's address
      expect(hostCounts(table)).toEqual([0, 0, 0, 0]);

      await outside.stop();
      await inside.stop();
      await net.detachTask('ext-1');
      expect(sh(`ip -n ${pod.netns} route show ${EXTERNAL}`).trim()).toBe('');
      expect(connect(pod.netns, EXTERNAL, 80)).toMatch(/^error:(ENETUNREACH|EHOSTUNREACH)$/);
      expect(hostCounts(table)).toEqual([0, 0, 0, 0]);
    } finally {
      await net.stop();
    }
    expect(isolationLeftovers(NET_PREFIX, [NET_SUBNET.replace(/\.0\/24$/, '.'), EXTERNAL])).toEqual([]);
  }, 60_000);

  it('scenario run examples/externals --isolation=netns: egress ipBlock with an except, ingress ipBlock, every external cell observed as computed', async () => {
    const json = join(tempDir('starmap-ext-iso-'), 'report.json');
    const { code, output } = await runToEnd(
      NODE,
      [
        'scenarios/main.ts',
        'run',
        'examples/externals/scenario.yaml',
        '--isolation=netns',
        `--netns-prefix=${RUN_PREFIX}`,
        `--netns-subnet=${RUN_SUBNET}`,
        `--report-json=${json}`,
      ],
      { timeoutMs: 200_000 },
    );
    expect(output, output).toMatch(/externals: PASS: 1 of 1 steps as expected/);
    expect(code).toBe(0);
    const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioReportDoc;
    expect(report).toMatchObject({ isolated: true, enforced: true, passed: true });
    const cells = report.steps[0]!.cells.filter((c) => c.from.startsWith('external:') || c.to.startsWith('external:'));
    const seen = (from: string, to: string) => cells.find((c) => c.from === from && c.to === to)?.observed;
    expect(cells).toHaveLength(16);
    expect(cells.every((c) => c.observed !== null && c.observed === c.computed)).toBe(true);
    expect(seen('shop/web', 'external:web-egress-e1p0')).toBe(true); // inside the CIDR
    expect(seen('shop/web', 'external:web-egress-e1p0x0')).toBe(false); // inside its except
    expect(seen('shop/web', 'external:internet')).toBe(false); // outside the ipBlock
    expect(seen('external:api-ingress-i1p0', 'shop/api')).toBe(true); // from the ingress ipBlock
    expect(seen('external:internet', 'shop/api')).toBe(false);
    expect(report.pods.find((p) => p.id === 'external:internet')?.ip).toBe('203.0.113.10');
    expect(isolationLeftovers(RUN_PREFIX, [RUN_SUBNET.replace(/\.0\/24$/, '.'), EXTERNAL])).toEqual([]);
  }, 240_000);

  it('orchestrator: after kill -9 and a start on the same state dir the external is back, reached both ways, and a policy denying it still denies it', async () => {
    const dataDir = tempDir('orch-ext-');
    const flags = ['--isolation=netns', `--netns-prefix=${RESTART_PREFIX}`, `--netns-subnet=${RESTART_SUBNET}`];
    const server = (port: number) => [NODE, '-e', SERVER, String(port)];
    const apps = [
      { id: '/ext/internet', args: server(80), labels: { 'starmap.external': EXTERNAL }, ipAddress: { networkName: 'starmap' }, taskKillGracePeriodSeconds: 1 },
      ...['open', 'shut'].map((pod) => ({
        id: `/ext/shop/${pod}`,
        args: server(8080),
        labels: { 'starmap.namespace': 'shop', pod },
        ipAddress: { networkName: 'starmap', discovery: { ports: [{ number: 8080, name: 'http', protocol: 'tcp' }] } },
        taskKillGracePeriodSeconds: 1,
      })),
    ];
    // Everything but the external, both ways, for pod shut only.
    const notTheExternal = { ipBlock: { cidr: '0.0.0.0/0', except: [`${EXTERNAL}/32`] } };
    const policy = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'no-external', namespace: 'shop' },
      spec: {
        podSelector: { matchLabels: { pod: 'shut' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ from: [notTheExternal] }],
        egress: [{ to: [notTheExternal] }],
      },
    };
    /** The namespace and subnet address of each app's running task (the namespace found by that address). */
    const where = async (o: StartedOrchestrator): Promise<Map<string, { ns: string; ip: string }>> => {
      const tasks = (await o.call('GET', '/v2/tasks')).body.tasks as { appId: string; state: string; ipAddresses?: { ipAddress: string }[] }[];
      const byIp = new Map<string, string>();
      for (const ns of sh('ip netns list')
        .split('\n')
        .map((l) => l.split(' ')[0]!)
        .filter((n) => n.startsWith(`${RESTART_PREFIX}-`)))
        for (const m of sh(`ip -n ${ns} -4 -o addr show dev eth0 2>/dev/null || true`).matchAll(/inet (\d+\.\d+\.\d+\.\d+)\//g)) byIp.set(m[1]!, ns);
      const found = new Map<string, { ns: string; ip: string }>();
      for (const t of tasks) {
        const ip = t.ipAddresses?.[0]?.ipAddress;
        const ns = ip === undefined ? undefined : byIp.get(ip);
        if (t.state === 'TASK_RUNNING' && ip !== undefined && ns !== undefined) found.set(t.appId, { ns, ip });
      }
      return found;
    };
    /** Every probe of the matrix, once each: pod → external:80 and external → pod:8080. */
    const probes = async (o: StartedOrchestrator) => {
      const w = await where(o);
      const ext = w.get('/ext/internet');
      const open = w.get('/ext/shop/open');
      const shut = w.get('/ext/shop/shut');
      if (!ext || !open || !shut) return undefined;
      return {
        openOut: tryConnect(open.ns, EXTERNAL, 80),
        openIn: tryConnect(ext.ns, open.ip, 8080),
        shutOut: tryConnect(shut.ns, EXTERNAL, 80),
        shutIn: tryConnect(ext.ns, shut.ip, 8080),
        open: open.ip,
      };
    };
    const expected = (openIp: string) => ({ openOut: `ok:${openIp}`, openIn: `ok:${EXTERNAL}`, shutOut: 'timeout', shutIn: 'timeout', open: openIp });
    const settled = async (o: StartedOrchestrator, when: string) => {
      let last: Awaited<ReturnType<typeof probes>>;
      return waitFor(
        async () => {
          last = await probes(o);
          return last !== undefined && JSON.stringify(last) === JSON.stringify(expected(last.open)) && last;
        },
        { timeoutMs: 60_000, intervalMs: 500, message: `${when}: open ↔ external answer, shut ↔ external denied` },
      ).catch((err: Error) => {
        throw new Error(`${err.message}; last probes: ${JSON.stringify(last)}`);
      });
    };

    const taskIds = async (o: StartedOrchestrator) => ((await o.call('GET', '/v2/tasks')).body.tasks as { id: string }[]).map((t) => t.id).sort();

    const first = await startOrchestrator(flags, { dataDir });
    expect((await first.call('PUT', '/v2/starmap/policies/shop/no-external', policy)).status).toBe(201);
    for (const a of apps) expect((await first.call('POST', '/v2/apps', a)).status).toBe(201);
    await settled(first, 'first start');
    const before = await taskIds(first);
    await first.proc.stop('SIGKILL');

    const second = await startOrchestrator(flags, { dataDir });
    await settled(second, 'after kill -9 and a start on the same state dir');
    // Replaced, not adopted: new tasks in fresh namespaces, the external's address and every pod's
    // on-link route to it made again (and nothing of the first run's namespaces left beside them).
    const after = await taskIds(second);
    expect(after).toHaveLength(3);
    expect(after.filter((id) => before.includes(id))).toEqual([]);
    const w = await where(second);
    expect(sh(`ip -n ${w.get('/ext/internet')!.ns} -4 -o addr show dev eth0`)).toContain(`inet ${EXTERNAL}/32`);
    for (const pod of ['open', 'shut']) expect(sh(`ip -n ${w.get(`/ext/shop/${pod}`)!.ns} route show ${EXTERNAL}`)).toContain('dev eth0 scope link');
    expect(
      sh('ip netns list')
        .split('\n')
        .filter((l) => l.startsWith(`${RESTART_PREFIX}-`)),
    ).toHaveLength(3);
    expect(await second.proc.stop('SIGTERM')).toBe(0);
    expect(isolationLeftovers(RESTART_PREFIX, [RESTART_SUBNET.replace(/\.0\/24$/, '.'), EXTERNAL])).toEqual([]);
  }, 180_000);
});
