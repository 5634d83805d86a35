// Published ports (--publish-address): the forwarder on its own (no root: a loopback server stands
// in for the task), the flag, the address the scenario runner prints, and with real namespaces an
// isolated task's TCP discovery ports published on 127.0.0.1 as the task's `ports`, answering
// under a deny-all ingress policy (forwarded connections come from the gateway), not at other host
// addresses, gone with the task, nothing left after SIGTERM. Prefix smpp and subnet
// 10.213.130.0/24 are this file's only.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupAll, leftovers } from '../../../orchestrator/isolation/index.ts';
import { PublishedPorts } from '../../../orchestrator/isolation/published-ports.ts';
import type { PlannedApp } from '../../../scenarios/run/deploy-plan.ts';
import { publishedPort } from '../../../scenarios/run/deploy.ts';
import { uiAddress } from '../../../scenarios/run/host-ports.ts';
import { startOrchestrator } from '../../helpers/orchestrator.ts';
import { NODE, runToEnd, stopAll } from '../../helpers/process.ts';
import { isolationSkip } from '../../helpers/isolation.ts';
import { waitFor } from '../../helpers/wait.ts';

const PREFIX = 'smpp';
const SUBNET = '10.213.130.0/24';
const skipReason = isolationSkip('orchestrator-isolation-publish');

afterAll(async () => {
  await stopAll();
  if (!skipReason) await cleanupAll({ prefix: PREFIX, subnet: SUBNET });
});

/** Sends `text`, half-closes, and reads everything until the other side closes. */
function exchange(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port });
    let got = '';
    s.setTimeout(5000, () => s.destroy(new Error('no answer within 5 s')));
    s.on('connect', () => s.end(text));
    s.on('data', (d) => (got += d.toString()));
    s.on('error', reject);
    s.on('close', () => resolve(got));
  });
}

/** Whether a TCP connection is accepted (and not closed at once). */
function refused(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s: Socket = connect({ host, port });
    s.setTimeout(3000, () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(true));
    s.on('connect', () => (s.destroy(), resolve(false)));
  });
}

describe('published ports: the forwarder (no root)', () => {
  it('forwards both ways with half-close, closes the client when the task refuses, and stops at release', async () => {
    // A stand-in task: echoes what it got, upper-cased, once the client has finished sending.
    const task: Server = createServer({ allowHalfOpen: true }, (s) => {
      let got = '';
      s.on('data', (d) => (got += d.toString()));
      s.on('end', () => s.end(got.toUpperCase()));
    });
    await new Promise<void>((r) => task.listen(0, '127.0.0.1', r));
    const taskPort = (task.address() as { port: number }).port;
    const pub = new PublishedPorts('127.0.0.1');
    const ports = await pub.publish('t1', '127.0.0.1', [taskPort, taskPort, 1]);
    expect(ports.map((p) => p.taskPort)).toEqual([taskPort, 1]); // each number once, in order
    expect(ports[0]!.hostPort).not.toBe(taskPort);
    expect(await exchange(ports[0]!.hostPort, 'hello')).toBe('HELLO');
    // Port 1 has nobody listening: the client's connection is closed, nothing hangs.
    expect(await exchange(ports[1]!.hostPort, 'x')).toBe('');
    expect(pub.ports('t1')).toEqual(ports);
    // An open connection is closed when the task's ports are released.
    const open = connect({ host: '127.0.0.1', port: ports[0]!.hostPort });
    await new Promise((r) => open.once('connect', r));
    const closed = new Promise((r) => open.once('close', r));
    open.on('error', () => undefined);
    await pub.release('t1');
    await closed;
    expect(await refused(ports[0]!.hostPort)).toBe(true);
    expect(pub.ports('t1')).toEqual([]);
    await pub.close();
    await new Promise((r) => task.close(r));
  });

  it('the scenario runner finds the published API port in the task ports and prints where to open it', () => {
    const app = {
      port: 9001,
      pod: {
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'x', port: 80, protocol: 'TCP' },
          { name: 'http', port: 9001, protocol: 'TCP' },
        ],
      },
    } as unknown as PlannedApp;
    expect(publishedPort(app, { ports: [40001, 40002] })).toBe(40002);
    expect(publishedPort(app, { ports: [] })).toBeUndefined();
    const ui = { app, base: 'http://10.213.0.5:9001', published: 40002 };
    const local = uiAddress(ui, '127.0.0.1');
    expect(local.url).toBe('http://127.0.0.1:40002/');
    expect(local.note).toContain('ssh -L 40002:127.0.0.1:40002');
    expect(local.note).toContain('--publish-address=0.0.0.0');
    expect(uiAddress(ui, '0.0.0.0')).toMatchObject({ url: 'http://127.0.0.1:40002/', note: expect.stringContaining('open to the network') });
    expect(uiAddress(ui, '192.0.2.7')).toEqual({ url: 'http://192.0.2.7:40002/' });
    expect(uiAddress(ui, 'off')).toEqual({ url: 'http://10.213.0.5:9001/' });
    expect(uiAddress({ app, base: 'http://10.213.0.5:9001' }, '127.0.0.1')).toEqual({ url: 'http://10.213.0.5:9001/' });
  });

  it('--publish-address is explained in --help and a name or bad value exits 2 naming the flag', async () => {
    const help = await runToEnd(NODE, ['orchestrator/main.ts', '--help']);
    expect(help.output).toContain('--publish-address');
    for (const bad of ['--publish-address=localhost', '--publish-address=999.1.1.1', '--publish_address=']) {
      const r = await runToEnd(NODE, ['orchestrator/main.ts', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.output, bad).toContain('--publish-address');
    }
    const s = await runToEnd(NODE, ['scenarios/main.ts', 'run', 'stars', '--publish-address=example.org']);
    expect(s.code).toBe(2);
    expect(s.output).toContain('--publish-address');
  }, 30_000);
});

const SERVER = `require('http').createServer((q,s)=>s.end('hello from '+process.env.HOST)).listen(8080,'0.0.0.0')`;

describe.skipIf(skipReason !== undefined)('published ports with --isolation=netns (root, iproute2, nftables)', () => {
  it("an isolated task's TCP ports are published on 127.0.0.1 as its ports, bypass ingress policy, and go with the task", async () => {
    const o = await startOrchestrator(['--auth=off', '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`]);
    const def = {
      id: '/pub/web',
      args: [NODE, '-e', SERVER],
      labels: { role: 'web' },
      ipAddress: {
        groups: [],
        networkName: 'starmap',
        discovery: {
          ports: [
            { number: 8080, name: 'http', protocol: 'tcp' },
            { number: 53, name: 'dns', protocol: 'udp' },
          ],
        },
      },
      taskKillGracePeriodSeconds: 1,
    };
    expect((await o.call('POST', '/v2/apps', def)).status).toBe(201);
    const t = await waitFor(
      async () => {
        const task = (await o.call('GET', '/v2/apps/pub/web/tasks')).body?.tasks?.[0];
        return task?.state === 'TASK_RUNNING' ? task : undefined;
      },
      { timeoutMs: 20_000, message: 'web running' },
    );
    const ip: string = t.ipAddresses[0].ipAddress;
    expect(t.ports).toHaveLength(1); // the TCP port only
    const hostPort: number = t.ports[0];
    const viaHost = async () => {
      try {
        return await (await fetch(`http://127.0.0.1:${hostPort}/`, { signal: AbortSignal.timeout(2000) })).text();
      } catch {
        return undefined;
      }
    };
    expect(await waitFor(viaHost, { timeoutMs: 15_000, message: 'published port answers' })).toBe(`hello from ${ip}`);
    // Bound to 127.0.0.1 only: the host's address on the bridge does not take it.
    expect(await refused(hostPort, '10.213.130.1')).toBe(true);

    // Deny all ingress (other tasks are refused): the published port still answers, since the
    // forwarder connects from the gateway, which ingress always accepts.
    expect((await o.call('PUT', '/v2/starmap/policies/deny-web', { selector: { labels: { role: 'web' } }, ingress: [] })).status).toBe(201);
    expect(await viaHost()).toBe(`hello from ${ip}`);

    expect((await o.call('DELETE', '/v2/apps/pub/web')).status).toBe(200);
    await waitFor(async () => (await refused(hostPort)) && (await leftovers(PREFIX, SUBNET)).namespaces.length === 0, {
      timeoutMs: 15_000,
      message: 'published port closed with the task',
    });
    expect(await o.proc.stop('SIGTERM')).toBe(0);
    expect(await leftovers(PREFIX, SUBNET)).toEqual({ namespaces: [], links: [], tables: [], routes: [] });
  }, 60_000);
});
