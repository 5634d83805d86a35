// Intents (scenarios/model/statements.ts): statements parsed, their sets resolved against the
// pods with the labels in force, turned into cells with intended verdicts; an unknown pod or
// external and a statement that matches no cell are errors that say so.
import { describe, expect, it } from 'vitest';
import { manifestPods, readManifestSet } from '../../../scenarios/model/manifests.ts';
import { manifestCells } from '../../../scenarios/model/scenario-manifests.ts';
import { MAX_CELLS, MAX_PODS } from '../../../scenarios/model/resolve.ts';
import { parseSet, parseStatement, statementCells, statementOf, StatementError, type StatementWorld } from '../../../scenarios/model/statements.ts';

const workload = (ns: string, name: string, labels: string, ports: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${name}, namespace: ${ns} }\nspec: { template: { metadata: { labels: ${labels} }, spec: { containers: [{ name: c, image: x, ports: ${ports} }] } } }\n`;
const text = [
  workload('shop', 'web', '{ app: web }', '[{ name: http, containerPort: 8080 }]'),
  workload('shop', 'api', '{ app: api }', '[{ name: http, containerPort: 9090 }, { name: metrics, containerPort: 9100 }]'),
  workload('data', 'db', '{ app: db }', '[{ name: pg, containerPort: 5432 }]'),
].join('---\n');
const pods = manifestPods(readManifestSet([{ file: 'm.yaml', text }], {}), { replicas: false, maxPods: MAX_PODS, maxCells: MAX_CELLS });
const world: StatementWorld = { pods, cells: manifestCells(pods) };
const keys = (doc: unknown, w: StatementWorld = world) =>
  statementCells(parseStatement(doc, 'test'), w).map((c) => `${c.key} ${c.intended ? 'allow' : 'deny'}`);

describe('parsing', () => {
  it('reads the verb, both sides, the port and except, and says it back', () => {
    const st = parseStatement({ deny: ' * ->  data/db:pg ', except: ['shop/api'] }, 'x');
    expect(st).toMatchObject({ verdict: 'deny', from: { kind: 'all' }, to: { kind: 'pod', name: 'data/db' }, port: { kind: 'name', name: 'pg' } });
    expect(st.text).toBe('deny: * -> data/db:pg except shop/api');
    expect(parseStatement({ allow: 'namespace=shop,app=web -> external:internet:443/tcp' }, 'x')).toMatchObject({
      from: { kind: 'selector', namespace: 'shop', labels: { app: 'web' } },
      to: { kind: 'external', name: 'internet' },
      port: { kind: 'number', port: 443, protocol: 'TCP' },
    });
    expect(parseSet('external:internet')).toEqual({ kind: 'external', name: 'internet' });
    expect(parseSet('shop/*')).toEqual({ kind: 'namespace', namespace: 'shop' });
  });
  it.each([
    [{ allow: 'a' }, 'one arrow'],
    [{ allow: 'a -> b -> c' }, 'one arrow'],
    [{ allow: 'a -> b', deny: 'a -> b' }, 'not both'],
    [{ permit: 'a -> b' }, 'give allow: or deny:'],
    [{ allow: 'a -> b', excpt: ['c'] }, 'unknown field "excpt"'],
    [{ allow: 'a -> b:99999' }, 'outside 1-65535'],
    [{ allow: 'a -> b:ht_tp' }, 'is not a port'],
    [{ allow: 'a -> b', except: 'c' }, 'except: must be a list'],
    ['allow a -> b', 'a statement is a map'],
  ])('refuses %j saying %s, after where it is', (doc, message) => {
    expect(() => parseStatement(doc, 'asserts.yaml #1')).toThrow(StatementError);
    expect(() => parseStatement(doc, 'asserts.yaml #1')).toThrow(new RegExp(`^asserts\\.yaml #1: .*${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });
});

describe('cells', () => {
  it('a pod to a named port: the cells on that port only', () => {
    expect(keys({ allow: 'shop/web -> shop/api:http' })).toEqual(['shop/web>shop/api@9090/TCP allow']);
  });
  it('"*" -> a pod except one: every other source, every port', () => {
    expect(keys({ deny: '* -> data/db', except: ['shop/api'] })).toEqual(['shop/web>data/db@5432/TCP deny']);
  });
  it('ns/* and selectors read the labels in force at the step', () => {
    expect(keys({ deny: 'shop/* -> data/db' })).toEqual(['shop/web>data/db@5432/TCP deny', 'shop/api>data/db@5432/TCP deny']);
    expect(keys({ allow: 'app=web -> data/db' })).toEqual(['shop/web>data/db@5432/TCP allow']);
    const relabelled = { ...world, podLabels: { 'shop/web': { app: 'frontend' } } };
    expect(keys({ allow: 'app=frontend -> namespace=data' }, relabelled)).toEqual(['shop/web>data/db@5432/TCP allow']);
    expect(keys({ allow: 'namespace=shop,app -> data/db:5432' })).toHaveLength(2);
  });
  it('an unknown pod is named with the nearest one', () => {
    expect(() => keys({ allow: 'shop/wbe -> shop/api' })).toThrow(/unknown pod "shop\/wbe" \(nearest: shop\/web\)/);
  });
  it('an external the scenario does not have is an unknown external; a known one resolves', () => {
    expect(() => keys({ deny: 'shop/* -> external:internet' })).toThrow(/unknown external "internet" \(this scenario declares no externals\)/);
    const withExternal: StatementWorld = {
      ...world,
      externals: ['internet'],
      cells: [
        ...world.cells,
        { key: 'shop/web>external:internet@443/TCP', from: 'shop/web', to: 'external:internet', port: 443, protocol: 'TCP', check: 'tcp' },
      ],
    };
    expect(keys({ deny: 'shop/* -> external:internet' }, withExternal)).toEqual(['shop/web>external:internet@443/TCP deny']);
  });
  it('a statement that matches no cell is an error that says why, never a pass', () => {
    expect(() => keys({ allow: 'data/db -> shop/api:5432' })).toThrow(/matches no cell .*none of their cells is on port 5432.*not a pass/);
    expect(() => keys({ allow: 'app=nothing -> shop/api' })).toThrow(/app=nothing is empty/);
    expect(() => keys({ allow: 'shop/web -> shop/web' })).toThrow(/matches no cell/);
  });
  it('statementOf builds what parseStatement reads', () => {
    expect(statementOf('deny', 'shop/*', 'data/db', ['shop/api']).text).toBe('deny: shop/* -> data/db except shop/api');
  });
});
