// Task environment (orchestrator/tasks/env.ts) and host port allocation, checked through a real task that
// writes its environment to a file.
import { afterEach, describe, expect, it } from 'vitest';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ProcessExecutor } from '../../../orchestrator/tasks/executor.ts';
import { scalaDouble, sanitizeLabelKey, taskEnvironment } from '../../../orchestrator/tasks/env.ts';
import { HostPortAllocator, PortsUnavailableError } from '../../../orchestrator/tasks/ports.ts';
import type { TaskStatusUpdate } from '../../../orchestrator/tasks/types.ts';
import { waitFor } from '../../helpers/wait.ts';
import { NODE, freePort, tempDir, removeTempDirs } from '../../helpers/process.ts';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  removeTempDirs();
});

describe('taskEnvironment', () => {
  const app = { appId: '/prod/web', version: '2026-11-21T10:00:00.000Z', cpus: 1, mem: 128, disk: 0, gpus: 0 };

  it('formats resources like Scala toString', () => {
    expect(scalaDouble(1)).toBe('1.0');
    expect(scalaDouble(128)).toBe('128.0');
    expect(scalaDouble(0)).toBe('0.0');
    expect(scalaDouble(0.25)).toBe('0.25');
    expect(scalaDouble(0.0001)).toBe('1.0E-4');
    expect(scalaDouble(12345678)).toBe('1.2345678E7');
  });

  it('gives HOST, PORT*, MESOS_TASK_ID, MARATHON_APP_* and lets the app env win', () => {
    const env = taskEnvironment(
      {
        ...app,
        cpus: 0.5,
        labels: { 'a.b-c': 'x', HAPROXY_GROUP: 'external', ['k'.repeat(493)]: 'dropped', big: 'v'.repeat(512) },
        env: { FOO: 'bar', PORT0: 'overridden', S: { secret: 'db' } },
        dockerImage: 'nginx:1',
      },
      'prod_web.abc',
      'agent1',
      [
        { hostPort: 31005, declaredPort: 8080, name: 'http', protocol: 'tcp' },
        { hostPort: 31007, declaredPort: 0, name: 'admin-api', protocol: 'tcp' },
      ],
    );
    expect(env).toEqual({
      HOST: 'agent1',
      PORT0: 'overridden',
      PORT1: '31007',
      PORT: '31005',
      PORTS: '31005,31007',
      PORT_8080: '31005',
      PORT_31007: '31007',
      PORT_HTTP: '31005',
      PORT_ADMIN_API: '31007',
      MESOS_TASK_ID: 'prod_web.abc',
      MARATHON_APP_ID: '/prod/web',
      MARATHON_APP_VERSION: '2026-11-21T10:00:00.000Z',
      MARATHON_APP_DOCKER_IMAGE: 'nginx:1',
      MARATHON_APP_RESOURCE_CPUS: '0.5',
      MARATHON_APP_RESOURCE_MEM: '128.0',
      MARATHON_APP_RESOURCE_DISK: '0.0',
      MARATHON_APP_RESOURCE_GPUS: '0',
      MARATHON_APP_LABELS: 'A_B_C HAPROXY_GROUP',
      MARATHON_APP_LABEL_A_B_C: 'x',
      MARATHON_APP_LABEL_HAPROXY_GROUP: 'external',
      FOO: 'bar',
    });
    expect(sanitizeLabelKey('my..label/x')).toBe('MY_LABEL_X');
  });

  it('uses the container port when a mapping has no host port, and the prefix for HOST/PORT only', () => {
    const env = taskEnvironment(app, 't.1', 'h', [{ hostPort: 0, declaredPort: 80, containerPort: 80, protocol: 'tcp' }], { envVarsPrefix: 'X_' });
    expect(env.X_PORT0).toBe('80');
    expect(env.X_HOST).toBe('h');
    expect(env.HOST).toBeUndefined();
    expect(env.MESOS_TASK_ID).toBe('t.1');
    expect(env.MARATHON_APP_LABELS).toBe('');
  });
});

describe('HostPortAllocator', () => {
  it('allocates distinct random ports in the range, skipping ports held by tasks and ports in use', async () => {
    // Above the ephemeral range (32768-60999 here), so no outgoing connection of another test holds one of them.
    const base = 61000 + Math.floor(Math.random() * 400) * 10;
    const busy = net.createServer();
    servers.push(busy);
    await new Promise<void>((r, j) => {
      busy.once('error', j);
      busy.listen(base + 1, '127.0.0.1', () => r());
    });
    const alloc = new HostPortAllocator({ min: base, max: base + 3 });
    const a = await alloc.allocate('a', 2);
    expect(new Set(a).size).toBe(2);
    expect(a).not.toContain(base + 1);
    for (const p of a) expect(p >= base && p <= base + 3).toBe(true);
    const b = await alloc.allocate('b', 1);
    expect([...a, ...b].sort()).toEqual([base, base + 2, base + 3].sort());
    await expect(alloc.allocate('c', 1)).rejects.toThrow(PortsUnavailableError);
    alloc.release('a');
    expect((await alloc.allocate('c', 2)).sort()).toEqual(a.sort());
  });

  it("take (the scheduler's synchronous choice): fixed ports exactly, zeros from the free range, null while a fixed one is held", () => {
    const alloc = new HostPortAllocator({ min: 100, max: 103, probe: false });
    const a = alloc.take('a', [0, 5000, 0])!;
    expect(a[1]).toBe(5000);
    expect(new Set([a[0], a[2]]).size).toBe(2);
    for (const p of [a[0]!, a[2]!]) expect(p >= 100 && p <= 103).toBe(true);
    expect(alloc.take('b', [5000])).toBeNull(); // requirePorts waits
    expect(() => alloc.take('b', [0, 0, 0])).toThrow(PortsUnavailableError); // 2 free in 100-103
    expect(alloc.inUse()).toEqual([...a].sort((x, y) => x - y)); // a failed take holds nothing
    alloc.release('a');
    expect(alloc.take('b', [5000])).toEqual([5000]);
  });

  it('requirePorts: exactly the declared ports, or a failure naming the busy one', async () => {
    const p1 = await freePort();
    const alloc = new HostPortAllocator({ min: 40000, max: 40010 });
    expect(await alloc.require('a', [p1])).toEqual([p1]);
    await expect(alloc.require('b', [p1])).rejects.toThrow(`required host port ${p1} is already in use`);
    alloc.release('a');
    const busy = net.createServer();
    servers.push(busy);
    await new Promise<void>((r) => busy.listen(p1, '127.0.0.1', () => r()));
    await expect(alloc.require('b', [p1])).rejects.toThrow(`required host port ${p1} is already in use`);
  });
});

describe('a real task sees its environment and can listen on its ports', () => {
  it('writes env to a file and listens on PORT0', async () => {
    const alloc = new HostPortAllocator({ min: 42000, max: 42999 });
    const ports = await alloc.allocate('web.1', 2);
    const env = taskEnvironment(
      { appId: '/web', version: 'v1', cpus: 1, mem: 64, disk: 0, gpus: 0, labels: { team: 'net' }, env: { GREETING: 'hi' } },
      'web.1',
      '127.0.0.1',
      [
        { hostPort: ports[0]!, declaredPort: 0, name: 'http', protocol: 'tcp' },
        { hostPort: ports[1]!, declaredPort: 9000, protocol: 'tcp' },
      ],
    );
    const ex = new ProcessExecutor();
    const updates: TaskStatusUpdate[] = [];
    ex.onStatus((u) => updates.push(u));
    const sandboxDir = join(tempDir('starmap-env-'), 'web.1');
    ex.launch({
      taskId: 'web.1',
      appId: '/web',
      appVersion: 'v1',
      cmd: null,
      args: ['sh', '-c', `env > env.txt; exec "${NODE}" -e "require('http').createServer((q, s) => s.end('ok')).listen(+process.env.PORT_HTTP, '127.0.0.1')"`],
      env,
      ports: [],
      sandboxDir,
      killGracePeriodSeconds: 1,
    });
    try {
      const text = await waitFor(() => {
        const t = readFileSync(join(sandboxDir, 'env.txt'), 'utf8');
        return t.includes('PORTS=') && t;
      });
      const got = Object.fromEntries(
        text
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      expect(got.PORT0).toBe(String(ports[0]));
      expect(got.PORT_9000).toBe(String(ports[1]));
      expect(got.PORTS).toBe(ports.join(','));
      expect(got.MARATHON_APP_LABEL_TEAM).toBe('net');
      expect(got.GREETING).toBe('hi');
      expect(got.MESOS_TASK_ID).toBe('web.1');
      await waitFor(() => fetch(`http://127.0.0.1:${ports[0]}/`).then(async (r) => (await r.text()) === 'ok'), { timeoutMs: 15_000 });
    } finally {
      await ex.shutdown();
      alloc.release('web.1');
    }
    expect(updates.at(-1)!.state).toBe('TASK_KILLED');
  });
});
