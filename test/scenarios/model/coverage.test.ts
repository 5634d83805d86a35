// Rule coverage (scenarios/model/coverage.ts): every rule and peer of every policy in force with
// the cells whose verdict it allowed, a peer hidden behind an earlier one found on its own, and
// dead rules named with why nothing exercises them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ruleCoverage } from '../../../scenarios/model/coverage.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { removeTempDirs, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

const deployment = (name: string, port: number) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${name}, namespace: x }\nspec: { template: { metadata: { labels: { app: ${name} } }, spec: { containers: [{ name: c, image: i, ports: [{ name: p, containerPort: ${port} }] }] } } }\n`;
const policy = (name: string, spec: string) =>
  `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: { name: ${name}, namespace: x }\nspec: ${spec}\n`;

function coverage() {
  const dir = tempDir('starmap-coverage-');
  const text = [
    deployment('a', 80),
    deployment('b', 80),
    deployment('c', 80),
    // ingress[0]: peer 0 a; peer 1 a or b (a is behind peer 0); ingress[1] a port nobody serves;
    // ingress[2]: a namespace that does not exist.
    policy(
      'to-c',
      `{ podSelector: { matchLabels: { app: c } }, ingress: [
        { from: [{ podSelector: { matchLabels: { app: a } } }, { podSelector: { matchExpressions: [{ key: app, operator: In, values: [a, b] }] } }] },
        { from: [{ podSelector: {} }], ports: [{ port: 9999 }] },
        { from: [{ namespaceSelector: { matchLabels: { team: nobody } } }] } ] }`,
    ),
    policy('nothing', '{ podSelector: { matchLabels: { app: missing } }, ingress: [{ from: [{ podSelector: {} }] }] }'),
  ].join('---\n');
  writeFileSync(join(dir, 'm.yaml'), text);
  const s = loadScenario(join(dir, 'm.yaml'));
  return ruleCoverage(expectStep(s, s.steps[0]!));
}

describe('rule coverage', () => {
  const all = coverage();
  const rule = (policy: string, r: number) => all.find((c) => c.policy === policy && c.direction === 'ingress' && c.rule === r)!;
  it('lists every rule with the cells it allowed, each peer with its own, a peer behind an earlier one included', () => {
    expect(all.map((c) => `${c.policy} ${c.direction}[${c.rule}]`)).toEqual([
      'x/to-c ingress[0]',
      'x/to-c ingress[1]',
      'x/to-c ingress[2]',
      'x/nothing ingress[0]',
    ]);
    expect(rule('x/to-c', 0)).toMatchObject({
      cells: ['x/a>x/c@80/TCP', 'x/b>x/c@80/TCP'],
      peers: [
        { peer: 0, cells: ['x/a>x/c@80/TCP'] },
        { peer: 1, cells: ['x/a>x/c@80/TCP', 'x/b>x/c@80/TCP'] },
      ],
    });
    expect(rule('x/to-c', 0).dead).toBeUndefined();
  });
  it('names dead rules and why: ports nobody serves, peers that match nothing, a policy that selects nothing', () => {
    expect(rule('x/to-c', 1)).toMatchObject({ cells: [], dead: 'dead: its peers match, but no cell is on its ports' });
    expect(rule('x/to-c', 2)).toMatchObject({ cells: [], dead: 'dead: no pod or external matches its peers' });
    expect(rule('x/nothing', 0).dead).toMatch(/^dead: the policy selects no pod/);
  });
});
