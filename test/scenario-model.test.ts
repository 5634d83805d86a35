// Scenario files: schema validation with clear errors, truth tables, comparison.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compare, edgeKey, expectedVerdicts, renderTables, scenarioEdges, type Observation } from '../scenarios/matrix.ts';
import { parseScenario } from '../scenarios/model.ts';
import { ROOT } from './helpers/process.ts';

const builtin = (name: string) => readFileSync(join(ROOT, 'scenarios', 'builtin', `${name}.yaml`), 'utf8');

describe('scenario files', () => {
  it('the built-in scenarios are valid and every step has a complete expectation', () => {
    for (const name of ['stars', 'matrix-3x3']) {
      const s = parseScenario(builtin(name), name);
      s.steps.forEach((step, i) => {
        const expected = expectedVerdicts(s, step, i);
        const edges = scenarioEdges(s);
        const selfOrIgnored = edges.filter((e) => !expected.has(edgeKey(e.from, e.to)));
        // Only the client's edge to itself is "not checked" in stars.
        expect(selfOrIgnored.length).toBe(0);
      });
    }
  });

  it('JSON is accepted too', () => {
    const s = parseScenario(JSON.stringify({ name: 'j', apps: [{ name: 'a', kind: 'probe', probes: ['a'] }], steps: [{ name: 's', policies: [], expect: { default: 'allow' } }] }));
    expect(s.apps[0]!.name).toBe('a');
  });

  it.each([
    ['name: [', /not valid YAML/],
    ['name: Bad_Name\napps: []\nsteps: []', /\/name \(line 1\)/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [zz] }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }', /\/apps\/0\/probes\/0: unknown app "zz"/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [nope], expect: { default: allow } }', /\/steps\/0\/policies\/0: unknown policy "nope"/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a], port: 70000 }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }', /\/apps\/0\/port/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }', /duplicate app name "a"/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a], colour: red }\nsteps:\n  - { name: s, policies: [], expect: { default: allow } }', /\/apps\/0/],
    ['name: x\napps:\n  - { name: a, kind: probe, probes: [a] }\nsteps:\n  - { name: s, policies: [], expect: {} }', /give a matrix, edges or a default/],
  ])('rejects a bad file with the path and line: %#', (text, pattern) => {
    expect(() => parseScenario(text, 'my.yaml')).toThrow(pattern);
    expect(() => parseScenario(text, 'my.yaml')).toThrow(/^my\.yaml: /);
  });

  it('rejects bad matrices with a clear message', () => {
    const s = parseScenario(builtin('matrix-3x3'));
    const step = (matrix: string) => ({ name: 'x', policies: [], expect: { matrix } });
    expect(() => expectedVerdicts(s, step('. a b c\na . .'), 0)).toThrow(/row 1: 2 cells, expected 3|header/);
    expect(() => expectedVerdicts(s, step('. a b z\na . . .'), 0)).toThrow(/unknown app "z"/);
    expect(() => expectedVerdicts(s, step('. a b c\na . Y .'), 0)).toThrow(/cell "Y"/);
  });
});

describe('truth tables', () => {
  const s = parseScenario(builtin('stars'));
  const step = s.steps[3]!; // backend-policy
  const expected = expectedVerdicts(s, step, 3);

  it('reads the expected matrix by short label', () => {
    expect(expected.get(edgeKey('frontend', 'backend'))).toBe('allow');
    expect(expected.get(edgeKey('client', 'backend'))).toBe('deny');
    expect(expected.get(edgeKey('management-ui', 'client'))).toBe('allow');
    expect(expected.has(edgeKey('client', 'client'))).toBe(false);
  });

  it('compares and renders expected, observed and mismatch tables', () => {
    const observed = new Map<string, Observation>();
    for (const [k, v] of expected) observed.set(k, { verdict: v, reason: v === 'allow' ? 'ok' : 'timeout', changedAt: null });
    observed.set(edgeKey('client', 'backend'), { verdict: 'allow', reason: 'ok', changedAt: null });
    observed.set(edgeKey('management-ui', 'frontend'), { verdict: 'unknown', reason: null, changedAt: null });
    const cmp = compare(scenarioEdges(s), expected, observed);
    expect(cmp).toMatchObject({ wrong: 1, noValue: 1, ignored: 0, total: 11 });
    expect(cmp.correct).toBe(9);
    const t = renderTables(s, expected, observed, cmp);
    expect(t.expected.split('\n')).toEqual(['   F  B  C', 'F  .  .  X', 'B  X  .  X', 'C  X  X  -', 'UI .  .  .']);
    expect(t.observed.split('\n')[3]).toBe('C  X  .  -');
    expect(t.mismatches.split('\n')[3]).toBe('C  .  .! -');
    expect(t.mismatches.split('\n')[4]).toBe('UI ?! .  .');
    expect(t.summary).toBe('1 wrong, 1 no value, 9 correct, 0 ignored out of 11');
  });
});

describe('published schema', () => {
  it('scenarios/scenario.schema.json is the schema the runner validates with', async () => {
    const { Scenario } = await import('../scenarios/model.ts');
    const published = JSON.parse(readFileSync(join(ROOT, 'scenarios', 'scenario.schema.json'), 'utf8')) as unknown;
    expect(published).toEqual(JSON.parse(JSON.stringify(Scenario)));
  });
});
