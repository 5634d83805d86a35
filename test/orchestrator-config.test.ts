// The orchestrator's configuration (orchestrator/config.ts) as the flag parser fills it: every
// default from one place, each setting in the slice its module receives.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, ISOLATION_FLAGS, defaultDataDir } from '../orchestrator/config.ts';
import { parseOrchestratorFlags } from '../orchestrator/flags.ts';
import { TaskNetwork } from '../orchestrator/isolation/netns.ts';
import { ROOT } from './helpers/process.ts';

describe('orchestrator configuration', () => {
  it('has the defaults of config.ts when no flag is given', () => {
    const c = parseOrchestratorFlags([]);
    expect(c).toMatchObject({
      dataDir: defaultDataDir(),
      http: { address: DEFAULTS.httpAddress, port: DEFAULTS.httpPort, allowedHosts: [] },
      servicePorts: { min: DEFAULTS.localPortMin, max: DEFAULTS.localPortMax },
      taskPorts: { min: DEFAULTS.taskPortMin, max: DEFAULTS.taskPortMax },
      envVarsPrefix: undefined,
      apps: { defaultNetworkName: undefined, defaultAcceptedResourceRoles: undefined },
      auth: { enabled: true, adminPassword: undefined, tokenLifetimeSeconds: DEFAULTS.tokenLifetime },
      events: { subscriber: undefined, httpEndpoints: [] },
      features: [],
      isolation: undefined,
      log: { file: undefined, level: DEFAULTS.logLevel },
      tasks: { defaultUser: undefined, stopGracePeriodSeconds: DEFAULTS.stopGracePeriod },
      tickMs: DEFAULTS.tickMs,
    });
    expect(typeof c.hostname).toBe('string');
  });

  it('puts each flag, in either spelling, in its slice', () => {
    const c = parseOrchestratorFlags([
      '--http_port=0',
      '--http-address=::1',
      '--data-dir=/tmp/x',
      '--hostname=h',
      '--local_port_min=15000',
      '--local-port-max=15100',
      '--task-port-min=40000',
      '--task_port_max=40010',
      '--env_vars_prefix=P_',
      '--default_network_name=dcos',
      '--default-accepted-resource-roles=a, b',
      '--auth=off',
      '--admin-password=pw-123456',
      '--token-lifetime=600',
      '--event_subscriber=http_callback',
      '--http_endpoints=http://127.0.0.1:9/cb',
      '--mesos_role=r',
      '--enable_features=task_killing,x',
      '--isolation=netns',
      '--netns-prefix=tst',
      '--netns-subnet=10.99.0.0/24',
      '--log-level=debug',
      '--logfile=/tmp/l',
      '--mesos_user=nobody',
      '--stop-grace-period=2',
    ]);
    expect(c).toEqual({
      dataDir: '/tmp/x',
      hostname: 'h',
      http: { address: '::1', port: 0, allowedHosts: [] },
      servicePorts: { min: 15000, max: 15100 },
      taskPorts: { min: 40000, max: 40010 },
      envVarsPrefix: 'P_',
      apps: { defaultNetworkName: 'dcos', defaultAcceptedResourceRoles: ['a', 'b'] },
      auth: { enabled: false, adminPassword: 'pw-123456', tokenLifetimeSeconds: 600 },
      events: { subscriber: 'http_callback', httpEndpoints: ['http://127.0.0.1:9/cb'] },
      mesosRole: 'r',
      features: ['task_killing', 'x'],
      isolation: { prefix: 'tst', subnet: '10.99.0.0/24', publishAddress: '127.0.0.1' },
      log: { file: '/tmp/l', level: 'debug' },
      tasks: { defaultUser: 'nobody', stopGracePeriodSeconds: 2 },
      tickMs: DEFAULTS.tickMs,
    });
  });

  it('writes the isolation defaults once, in config.ts: --isolation=netns without its flags and the task network use them', () => {
    expect(parseOrchestratorFlags(['--isolation=netns']).isolation).toEqual({
      prefix: DEFAULTS.netnsPrefix,
      subnet: DEFAULTS.netnsSubnet,
      publishAddress: DEFAULTS.publishAddress,
    });
    const net = new TaskNetwork();
    expect([net.prefix, net.subnet.cidr]).toEqual([DEFAULTS.netnsPrefix, DEFAULTS.netnsSubnet]);
    // No other file of the orchestrator writes one of them again.
    const values = Object.values(ISOLATION_FLAGS).map((f) => f.default);
    const written: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name);
        if (e.isDirectory()) walk(path);
        else if (e.name.endsWith('.ts') && path !== join(ROOT, 'orchestrator', 'config.ts')) {
          const text = readFileSync(path, 'utf8');
          for (const v of values)
            if (text.includes(`default: '${v}'`) || (v !== 'off' && v !== '127.0.0.1' && text.includes(`'${v}'`)))
              written.push(`${relative(ROOT, path)}: ${v}`);
        }
      }
    };
    walk(join(ROOT, 'orchestrator'));
    expect(written).toEqual([]);
  });
});
