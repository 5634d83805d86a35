// Reading stored definitions again at start-up (orchestrator/storage/stored-app.ts) must give back
// exactly what was stored, or a scale after a restart would look like a configuration change and
// restart every task; and what cannot be read, or honoured, must be said, not thrown.
import { describe, expect, it } from 'vitest';
import { isConfigChange, parseApp, type AppDefinition } from '../../../orchestrator/state/app-definition.ts';
import { definitionProblem } from '../../../orchestrator/state/bounds.ts';
import { reviveApp } from '../../../orchestrator/storage/stored-app.ts';

const NOW = '2024-05-01T10:00:00.000Z';

/** As the scheduler stores a new app: parsed, versioned, service ports assigned. */
function stored(body: Record<string, unknown>): AppDefinition {
  const app = parseApp(body, { now: NOW });
  const out = { ...app, versionInfo: { lastScalingAt: NOW, lastConfigChangeAt: '2024-04-01T10:00:00.000Z' } };
  if (out.portDefinitions) out.portDefinitions = out.portDefinitions.map((p, i) => ({ ...p, port: p.port || 10_000 + i }));
  if (out.portDefinitions) out.ports = out.portDefinitions.map((p) => p.port);
  return JSON.parse(JSON.stringify(out)) as AppDefinition;
}

const DEFINITIONS: Record<string, unknown>[] = [
  { id: '/plain', cmd: 'sleep 1000' },
  {
    id: '/full',
    cmd: 'sleep 1000',
    instances: 3,
    env: { A: '1', S: { secret: 'pw' } },
    secrets: { pw: { source: 'x' } },
    labels: JSON.parse('{"__proto__":"p","tier":"web"}'),
    portDefinitions: [
      { port: 0, name: 'http', labels: { a: 'b' } },
      { port: 0, protocol: 'udp' },
    ],
    healthChecks: [
      { protocol: 'HTTP', path: '/h' },
      { protocol: 'COMMAND', command: { value: 'true' } },
    ],
    readinessChecks: [{ portName: 'http' }],
    constraints: [['hostname', 'LIKE', '127\\..*']],
    dependencies: ['../db'],
    upgradeStrategy: { minimumHealthCapacity: 0.5, maximumOverCapacity: 0 },
    taskKillGracePeriodSeconds: 5,
    killSelection: 'OLDEST_FIRST',
    uris: ['http://127.0.0.1/a.tgz'],
  },
  {
    id: '/g/docker',
    container: { type: 'DOCKER', docker: { image: 'alpine', network: 'BRIDGE', portMappings: [{ containerPort: 80, name: 'web' }] } },
    args: ['sh', '-c', 'sleep 1'],
  },
  {
    id: '/g/ip',
    cmd: 'sleep 1',
    ipAddress: { groups: ['a'], labels: { x: 'y' }, discovery: { ports: [{ number: 80, name: 'http', protocol: 'tcp' }] } },
    acceptedResourceRoles: ['*'],
  },
];

describe('stored definitions read back', () => {
  it('gives back exactly what was stored', () => {
    for (const body of DEFINITIONS) {
      const app = stored(body);
      const r = reviveApp(app.id, JSON.parse(JSON.stringify(app)));
      expect('app' in r, String(body.id)).toBe(true);
      if (!('app' in r)) continue;
      expect(r.app, String(body.id)).toEqual(app);
      // Read back, it is the same configuration (a scale after a restart stays a scale).
      expect(isConfigChange(app, r.app), String(body.id)).toBe(false);
    }
  });

  it('keeps labels in prototype-free maps', () => {
    const r = reviveApp('/full', JSON.parse(JSON.stringify(stored(DEFINITIONS[1]!))));
    if (!('app' in r)) throw new Error(r.problem);
    expect(Object.getPrototypeOf(r.app.labels)).toBe(null);
    expect(Object.keys(r.app.labels)).toEqual(['__proto__', 'tier']);
  });

  it('says what cannot be read, and what cannot be honoured', () => {
    expect(reviveApp('/x', 'text')).toEqual({ problem: 'not a JSON object' });
    expect(reviveApp('/x', { id: '/y', cmd: 'x' })).toEqual({ problem: 'its id "/y" is not its key' });
    expect(reviveApp('/x', { id: '/x', cmd: 5 })).toMatchObject({ problem: expect.stringMatching(/^not a readable app definition: .*\/cmd/) });
    const huge = reviveApp('/big', { ...stored({ id: '/big', cmd: 'sleep 1' }), instances: 1e9, constraints: [['hostname', 'LIKE', '(?=a)']] });
    if (!('app' in huge)) throw new Error(huge.problem);
    expect(definitionProblem(huge.app)).toMatch(
      /^app definition cannot be honoured: \/constraints\(0\) .*; \/instances got 1000000000, expected 10000 or less$/,
    );
    expect(definitionProblem(stored({ id: '/fine', cmd: 'sleep 1' }))).toBeUndefined();
  });

  it('keeps loading definitions stored before the label rules: one with a NUL launches nothing and says why, the others run as before', () => {
    const before = { ...stored({ id: '/old', cmd: 'sleep 1', ipAddress: {} }), labels: { 'starmap.namespace': 'team\nb', tier: 'has space' } };
    const old = reviveApp('/old', JSON.parse(JSON.stringify(before)));
    if (!('app' in old)) throw new Error(old.problem);
    expect(old.app.labels).toEqual({ 'starmap.namespace': 'team\nb', tier: 'has space' });
    expect(definitionProblem(old.app)).toBeUndefined();
    const withNul = reviveApp('/nul', JSON.parse(JSON.stringify({ ...stored({ id: '/nul', cmd: 'sleep 1' }), labels: { a: 'b\u0000' } })));
    if (!('app' in withNul)) throw new Error(withNul.problem);
    expect(definitionProblem(withNul.app)).toBe(
      'app definition cannot be honoured: /labels/a must not contain a NUL character (\\u0000): no process environment can carry one',
    );
  });
});
