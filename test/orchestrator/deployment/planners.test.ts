// The orchestrator's pure planners on their own, without a process: deployment plans and the
// rolling-restart strategy (deployment/plan.ts), the dependency graph (deployment/dependencies.ts),
// group changes (group/editor.ts), launch back-off (launch-queue/backoff.ts), placement
// constraints (state/constraints.ts), the `label` query's selector (api/common.ts) and the label
// selectors the policy compiler uses (shared/netpol/selector.ts, shared with the evaluator).
import { describe, expect, it } from 'vitest';
import { parseLabelSelector } from '../../../orchestrator/api/common.ts';
import { InvalidObject, Unprocessable } from '../../../orchestrator/errors.ts';
import { answerFor } from '../../../orchestrator/http/errors.ts';
import { DependencyGraph } from '../../../orchestrator/deployment/dependencies.ts';
import { GroupEditor, treeAsUpdate, type Versioner } from '../../../orchestrator/group/editor.ts';
import { buildPlan, restartStrategy } from '../../../orchestrator/deployment/plan.ts';
import type { AppChange } from '../../../orchestrator/state/app-change.ts';
import { groupTree } from '../../../orchestrator/state/group-tree.ts';
import { BACKOFF_STATES, isDelayed, nextDelay } from '../../../orchestrator/launch-queue/backoff.ts';
import { configVersionOf } from '../../../orchestrator/state/app-update.ts';
import { parseApp, type AppDefinition } from '../../../orchestrator/state/app-definition.ts';
import { compilePattern, constraintProblems, placementLimit } from '../../../orchestrator/state/constraints.ts';
import type { GroupRecord } from '../../../orchestrator/state/group.ts';
import { labelsInclude, selectorMatches } from '../../../shared/netpol/selector.ts';

const T0 = '2024-05-01T10:00:00.000Z';
const T1 = '2024-05-01T11:00:00.000Z';

function app(id: string, extra: Record<string, unknown> = {}, version = T0): AppDefinition {
  const a = parseApp({ id, cmd: 'sleep 1000', ...extra }, { now: version });
  return { ...a, versionInfo: { lastScalingAt: version, lastConfigChangeAt: version } };
}

function appsOf(...list: AppDefinition[]): Map<string, AppDefinition> {
  return new Map(list.map((a) => [a.id, a]));
}

function groupsOf(...list: [string, string[]][]): Map<string, GroupRecord> {
  return new Map(list.map(([id, dependencies]) => [id, { id, dependencies, version: T0 }]));
}

/** As the scheduler versions: a configuration change moves lastConfigChangeAt, a scale only lastScalingAt. */
const versioner: Versioner = (before, next, _restart, version) => {
  const { versionInfo: _vi, version: _v, ...a } = next;
  const { versionInfo: _bvi, version: _bv, ...b } = before ?? next;
  const config = !before || JSON.stringify({ ...a, instances: 0 }) !== JSON.stringify({ ...b, instances: 0 });
  return { ...next, version, versionInfo: { lastScalingAt: version, lastConfigChangeAt: config ? version : configVersionOf(before!) } };
};

describe('deployment plans', () => {
  const current = appsOf(app('/kept'), app('/gone'), app('/scaled'), app('/changed'), app('/db'), app('/web'));
  const depths = new Map([
    ['/web', 2],
    ['/db', 1],
  ]);

  it('orders steps: stops, starts, then scales and restarts by dependency depth', () => {
    const changes: AppChange[] = [
      { id: '/gone', target: null },
      { id: '/new', target: app('/new', {}, T1) },
      { id: '/scaled', target: { ...current.get('/scaled')!, instances: 3 } },
      { id: '/changed', target: app('/changed', { cmd: 'sleep 2000' }, T1) },
      { id: '/web', target: app('/web', { cmd: 'other' }, T1) },
      { id: '/db', target: app('/db', { cmd: 'other' }, T1) },
    ];
    const plan = buildPlan(
      changes,
      (id) => current.get(id),
      T1,
      (id) => depths.get(id) ?? 1,
      '/',
    );
    expect(plan.steps).toEqual([
      { actions: [{ action: 'StopApplication', app: '/gone' }] },
      { actions: [{ action: 'StartApplication', app: '/new' }] },
      {
        actions: [
          { action: 'ScaleApplication', app: '/new' },
          { action: 'ScaleApplication', app: '/scaled' },
          { action: 'RestartApplication', app: '/changed' },
          { action: 'RestartApplication', app: '/db' },
        ],
      },
      { actions: [{ action: 'RestartApplication', app: '/web' }] },
    ]);
    expect(plan.affectedApps).toEqual(['/gone', '/new', '/scaled', '/changed', '/web', '/db']);
    expect(plan.original['/gone']).toBe(current.get('/gone'));
    expect(plan.original['/new']).toBeNull();
    expect(plan.target['/gone']).toBeNull();
    expect(plan).toMatchObject({ version: T1, groupId: '/', currentStep: 0, restart: {} });
    expect(plan.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('scales (not restarts) a changed app whose target has no instances', () => {
    const plan = buildPlan(
      [{ id: '/changed', target: app('/changed', { cmd: 'new', instances: 0 }, T1) }],
      (id) => current.get(id),
      T1,
      () => 1,
    );
    expect(plan.steps).toEqual([{ actions: [{ action: 'ScaleApplication', app: '/changed' }] }]);
  });

  it('has no steps for removing an app that is not there or changing nothing', () => {
    const plan = buildPlan(
      [
        { id: '/never', target: null },
        { id: '/kept', target: current.get('/kept')! },
      ],
      (id) => current.get(id),
      T1,
      () => 1,
    );
    expect(plan.steps).toEqual([]);
    expect(plan.affectedApps).toEqual(['/never', '/kept']);
  });
});

describe('rolling restart strategy', () => {
  it('kills what exceeds the minimum healthy and caps the capacity', () => {
    expect(restartStrategy(4, 4, 0.5, 0.5)).toEqual({ killImmediately: 2, maxCapacity: 6 });
    expect(restartStrategy(4, 4, 1, 0)).toEqual({ killImmediately: 0, maxCapacity: 5 });
    expect(restartStrategy(3, 3, 0, 0)).toEqual({ killImmediately: 3, maxCapacity: 3 });
    expect(restartStrategy(3, 1, 1, 1)).toEqual({ killImmediately: 0, maxCapacity: 6 });
    expect(restartStrategy(1, 1, 1, 0)).toEqual({ killImmediately: 0, maxCapacity: 2 });
  });
});

describe('dependency graph', () => {
  it('expands dependencies on groups and inherits those of the groups above', () => {
    const apps = appsOf(app('/db/pg'), app('/db/cache'), app('/web/front', { dependencies: ['/db'] }), app('/web/api'), app('/tools/cron'));
    const graph = new DependencyGraph(apps, groupsOf(['/web', ['/tools/cron']]));
    expect(graph.dependenciesOf('/web/front').sort()).toEqual(['/db/cache', '/db/pg', '/tools/cron']);
    expect(graph.dependenciesOf('/web/api')).toEqual(['/tools/cron']);
    expect(graph.dependenciesOf('/db/pg')).toEqual([]);
    expect(Object.fromEntries(graph.depths())).toEqual({ '/web/front': 2, '/web/api': 2, '/tools/cron': 1, '/db/pg': 1, '/db/cache': 1 });
  });

  it('never makes an app wait for itself', () => {
    const graph = new DependencyGraph(appsOf(app('/g/a'), app('/g/b')), groupsOf(['/g', ['/g']]));
    expect(graph.dependenciesOf('/g/a')).toEqual(['/g/b']);
    expect(graph.dependenciesOf('/g/b')).toEqual(['/g/a']);
  });

  it('refuses a cycle with 422', () => {
    const graph = new DependencyGraph(
      appsOf(app('/a', { dependencies: ['/b'] }), app('/b', { dependencies: ['/c'] }), app('/c', { dependencies: ['/a'] })),
      new Map(),
    );
    let caught: unknown;
    try {
      graph.depths();
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidObject);
    expect(answerFor(caught as InvalidObject)).toEqual({
      status: 422,
      body: { message: 'Object is not valid', details: [{ path: '/', errors: ['Dependency graph has cyclic dependencies.'] }] },
      headers: {},
    });
  });

  it('gives a chain its longest path', () => {
    const graph = new DependencyGraph(appsOf(app('/a', { dependencies: ['/b', '/c'] }), app('/b', { dependencies: ['/c'] }), app('/c')), new Map());
    expect(Object.fromEntries(graph.depths())).toEqual({ '/a': 3, '/b': 2, '/c': 1 });
  });
});

describe('group changes', () => {
  const before = appsOf(app('/g/a'), app('/g/b'), app('/g/sub/c'), app('/other'));
  const groups = groupsOf(['/', []], ['/g', []], ['/g/sub', []]);

  it('replaces the apps of a group given its apps, and versions the groups on the way', () => {
    const editor = new GroupEditor(before, groups, T1);
    editor.update({ id: '/g', apps: [app('/g/a'), { ...app('/g/b'), instances: 4 }, app('/g/new')] });
    const r = editor.result(versioner);
    expect(r.changes.map((c) => [c.id, c.target?.instances ?? null])).toEqual([
      ['/g/b', 4],
      ['/g/new', 1],
    ]);
    // A scale keeps the configuration version; a new app gets this change's.
    expect(r.changes[0]!.target!.versionInfo).toEqual({ lastScalingAt: T1, lastConfigChangeAt: T0 });
    expect(r.changes[1]!.target!.versionInfo).toEqual({ lastScalingAt: T1, lastConfigChangeAt: T1 });
    expect(r.putGroups.map((g) => [g.id, g.version])).toEqual([
      ['/', T1],
      ['/g', T1],
    ]);
    expect(r.removeGroups).toEqual([]);
  });

  it('removes subgroups not given, with their apps', () => {
    const editor = new GroupEditor(before, groups, T1);
    editor.update({ id: '/g', groups: [] });
    const r = editor.result(versioner);
    expect(r.changes).toEqual([{ id: '/g/sub/c', target: null }]);
    expect(r.removeGroups).toEqual(['/g/sub']);
  });

  it('creates missing groups above an update, with its dependencies', () => {
    const editor = new GroupEditor(before, groups, T1);
    editor.update({ id: '/x/y', dependencies: ['/other'] });
    const r = editor.result(versioner);
    expect(r.changes).toEqual([]);
    expect(r.putGroups).toEqual([
      { id: '/', dependencies: [], version: T1 },
      { id: '/x', dependencies: [], version: T1 },
      { id: '/x/y', dependencies: ['/other'], version: T1 },
    ]);
  });

  it('scales every app beneath a group, rounding up', () => {
    const editor = new GroupEditor(appsOf({ ...app('/g/a'), instances: 3 }, app('/g/sub/c'), app('/other')), groups, T1);
    editor.scaleBy('/g', 1.5);
    const r = editor.result(versioner);
    expect(r.changes.map((c) => [c.id, c.target?.instances])).toEqual([
      ['/g/a', 5],
      ['/g/sub/c', 2],
    ]);
  });

  it('removes a group with everything beneath it but keeps the root', () => {
    const editor = new GroupEditor(before, groups, T1);
    editor.remove('/');
    const r = editor.result(versioner);
    expect(r.changes.map((c) => c.id)).toEqual(['/g/a', '/g/b', '/g/sub/c', '/other']);
    expect(r.changes.every((c) => c.target === null)).toBe(true);
    expect(r.removeGroups).toEqual(['/g', '/g/sub']);
    expect([...editor.groups.keys()]).toEqual(['/']);
  });

  it('builds the tree from records and from the paths of apps, and turns it back into an update', () => {
    const apps = appsOf(app('/g/b'), app('/g/a'), app('/loose/x/y'));
    const tree = groupTree('/', apps, groupsOf(['/', []], ['/g', ['/loose']], ['/empty', []]));
    expect(tree.groups.map((g) => g.id)).toEqual(['/empty', '/g', '/loose']);
    const g = tree.groups[1]!;
    expect(g.apps.map((a) => a.id)).toEqual(['/g/a', '/g/b']);
    expect(g.dependencies).toEqual(['/loose']);
    const loose = tree.groups[2]!;
    // A group without record: no dependencies, the newest version of its apps (none directly: the epoch).
    expect(loose).toMatchObject({ id: '/loose', dependencies: [], version: new Date(0).toISOString() });
    expect(loose.groups[0]).toMatchObject({ id: '/loose/x', version: T0 });
    const update = treeAsUpdate(g);
    expect(update.id).toBe('/g');
    expect(update.apps!.map((a) => a.id)).toEqual(['/g/a', '/g/b']);
    expect(update.apps!.every((a) => a.versionInfo === undefined)).toBe(true);
  });
});

describe('launch back-off', () => {
  const a = app('/a', { backoffSeconds: 2, backoffFactor: 3, maxLaunchDelaySeconds: 10 });
  const cv = configVersionOf(a);

  it('grows by the factor up to the maximum, per configuration version', () => {
    const first = nextDelay(a, cv, undefined, 1000);
    expect(first).toEqual({ appId: '/a', configVersion: cv, delaySeconds: 2, deadline: 3000, failures: 1 });
    const second = nextDelay(a, cv, first, 5000);
    expect(second).toMatchObject({ delaySeconds: 6, deadline: 11_000, failures: 2 });
    expect(nextDelay(a, cv, second, 0)).toMatchObject({ delaySeconds: 10, failures: 3 });
    // A new configuration starts fresh.
    expect(nextDelay(a, T1, second, 0)).toMatchObject({ configVersion: T1, delaySeconds: 2, failures: 1 });
  });

  it('delays launches only of the same configuration, until the deadline', () => {
    const d = nextDelay(a, cv, undefined, 0);
    expect(isDelayed(a, d, 1999)).toBe(true);
    expect(isDelayed(a, d, 2000)).toBe(false);
    expect(isDelayed(a, undefined, 0)).toBe(false);
    expect(isDelayed({ ...a, versionInfo: { lastScalingAt: T1, lastConfigChangeAt: T1 } }, d, 0)).toBe(false);
  });

  it('counts failures, not kills', () => {
    expect(BACKOFF_STATES.has('TASK_FAILED')).toBe(true);
    expect(BACKOFF_STATES.has('TASK_FINISHED')).toBe(true);
    expect(BACKOFF_STATES.has('TASK_KILLED')).toBe(false);
  });

  it('takes the configuration version from versionInfo, else the version', () => {
    expect(configVersionOf(a)).toBe(T0);
    expect(configVersionOf(parseApp({ id: '/b', cmd: 'x' }, { now: T1 }))).toBe(T1);
  });
});

describe('placement constraints', () => {
  it("states Marathon's rules with their paths", () => {
    expect(
      constraintProblems([
        ['hostname', 'UNIQUE'],
        ['hostname', 'MAX_PER', '2'],
        ['hostname', 'LIKE', 'a.*'],
      ]),
    ).toEqual([]);
    expect(constraintProblems([['hostname'], ['hostname', 'NOPE'], ['hostname', 'GROUP_BY', 'x'], ['hostname', 'UNLIKE']])).toEqual([
      { path: '/constraints(0)', errors: ['Each constraint must have either 2 or 3 fields'] },
      { path: '/constraints(1)', errors: ['Constraint operator must be one of the following: [UNIQUE, CLUSTER, GROUP_BY, LIKE, UNLIKE, MAX_PER]'] },
      { path: '/constraints(2)', errors: ['Value was not an integer number'] },
      { path: '/constraints(3)', errors: ['A regular expression value must be provided'] },
    ]);
  });

  it('refuses patterns RE2 cannot match in linear time, and overlong ones', () => {
    expect(typeof compilePattern('(a)\\1')).toBe('string');
    expect(compilePattern('x'.repeat(513))).toBe('got a value of 513 characters, expected 512 or less');
    expect(typeof compilePattern('(.*.*)*X')).not.toBe('string');
  });

  it('compiles to a per-host limit', () => {
    expect(placementLimit([])('h')).toBe(Infinity);
    expect(placementLimit([['hostname', 'UNIQUE']])('h')).toBe(1);
    expect(
      placementLimit([
        ['hostname', 'MAX_PER', '3'],
        ['hostname', 'LIKE', 'h.*'],
      ])('host'),
    ).toBe(3);
    expect(placementLimit([['hostname', 'LIKE', 'h.*']])('x-host')).toBe(0);
    expect(placementLimit([['hostname', 'UNLIKE', 'h.*']])('x-host')).toBe(Infinity);
    expect(placementLimit([['hostname', 'CLUSTER', 'a']])('b')).toBe(0);
    expect(placementLimit([['rack', 'UNIQUE']])('h')).toBe(Infinity);
    // A stored pattern that does not compile places nothing.
    expect(placementLimit([['hostname', 'LIKE', '(a)\\1']])('a')).toBe(0);
  });
});

describe('label selectors', () => {
  const labels = Object.assign(Object.create(null) as Record<string, string>, { tier: 'web', env: 'prod' });

  it('reads the `label` query grammar', () => {
    expect(parseLabelSelector('tier')(labels)).toBe(true);
    expect(parseLabelSelector('tier==web, env==prod')(labels)).toBe(true);
    expect(parseLabelSelector('tier!=web')(labels)).toBe(false);
    expect(parseLabelSelector('tier in (db, web)')(labels)).toBe(true);
    expect(parseLabelSelector('tier notin (web)')(labels)).toBe(false);
    expect(parseLabelSelector('missing!=x')(labels)).toBe(false);
    expect(parseLabelSelector('a\\,b')(Object.assign(Object.create(null) as Record<string, string>, { 'a,b': '' }))).toBe(true);
    expect(parseLabelSelector('constructor')(labels)).toBe(false);
  });

  it('refuses what it cannot parse with 422', () => {
    for (const text of ['tier=web', 'tier in web', 'tier in (a', ',', '']) {
      expect(() => parseLabelSelector(text), text).toThrow(`Can not parse label selector ${text}`);
      expect(() => parseLabelSelector(text), text).toThrow(Unprocessable);
    }
    expect(answerFor(new Unprocessable('x')).status).toBe(422);
  });

  it('matches Kubernetes selectors', () => {
    expect(selectorMatches({}, {})).toBe(true);
    expect(selectorMatches({ matchLabels: { tier: 'web' } }, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { tier: 'db' } }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'db'] }] }, labels)).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }] }, labels)).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'tier', operator: 'Gt' as 'In' }] }, labels)).toBe(false);
    expect(selectorMatches({ matchLabels: { constructor: 'x' } }, labels)).toBe(false);
  });

  it("matches the dialect's `labels` subset", () => {
    expect(labelsInclude({}, labels)).toBe(true);
    expect(labelsInclude({ tier: 'web' }, labels)).toBe(true);
    expect(labelsInclude({ tier: 'web', zone: 'a' }, labels)).toBe(false);
  });
});
