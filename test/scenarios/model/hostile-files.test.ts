// Scenario files (and the manifest files they name) built to hang or crash the CLI: each must be
// refused with exit 2 and a message naming the file, never a stack trace, an out-of-memory abort
// or a wait. The real CLI runs as a child process with a generous hard kill deadline; how long
// each takes is measured by hand (the coordinator's report), not asserted.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readScenario } from '../../../scenarios/model/scenario-file.ts';
import { resolveScenario } from '../../../scenarios/model/resolve.ts';
import { MAX_FLOW_DEPTH, MAX_INDENT, MAX_VALUES, shapeProblem } from '../../../scenarios/model/yaml-bounds.ts';
import { NODE, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

afterAll(stopAll);

const dir = tempDir('starmap-hostile-');
const PODS = `apps:
  - { name: a, kind: probe, probes: [b] }
  - { name: b, kind: probe, probes: [a] }
`;

/** A bomb of `levels` levels of 10 aliases each: 10^levels values once expanded. */
const aliasBomb = (levels: number) =>
  [
    'a0: &a0 [x, x, x, x, x, x, x, x, x, x]',
    ...Array.from({ length: levels }, (_, i) => `a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(', ')}]`),
  ].join('\n');

/** Each file and what the refusal says (the deep ones used to overflow the parser's stack first). */
const HOSTILE: Record<string, string> = {
  'unclosed-template': `name: t\n${PODS}policies:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: { name: p, namespace: default }
    spec:
      podSelector: {}
      ingress:
        - from:
            - ipBlock: { cidr: "{{ip${' '.repeat(1_000_000)}" }
steps:
  - name: s
`,
  'duplicate-steps': `name: t\n${PODS}steps:\n${'  - name: s\n'.repeat(100_000)}`,
  // Under the value bound: the duplicates are found, and the lines of only the first few said.
  'duplicate-steps-small': `name: t\n${PODS}steps:\n${'  - name: s\n'.repeat(9_000)}`,
  brackets: '['.repeat(2_000_000),
  'deep-flow': `name: t\nsteps: ${'['.repeat(5000)}${']'.repeat(5000)}\n`,
  'deep-json': `{"name": "t", "steps": ${'{"a": '.repeat(3000)}1${'}'.repeat(3000)}}`,
  'deep-block': `name: t\nsteps:\n${Array.from({ length: 1500 }, (_, i) => `${' '.repeat(i + 2)}k${i}:`).join('\n')} v\n`,
  'compact-sequences': `name: t\nsteps:\n  ${'- '.repeat(20_000)}x\n`,
  'alias-bomb': `name: t\n${aliasBomb(9)}\n`,
};

async function check(file: string): Promise<{ code: number | string; output: string }> {
  return runToEnd(NODE, ['scenarios/main.ts', 'check', file], { timeoutMs: 60_000 });
}

const SAYS: Record<string, RegExp> = {
  'unclosed-template': /ipBlock\/cidr \(line 13\): Invalid value/,
  'duplicate-steps': /more than 20000 values \(at line \d+\)/,
  'duplicate-steps-small': /\/steps\/1\/name \(line 7\): duplicate step name "s"/,
  brackets: /nested deeper than 64 levels of \[ \] and \{ \} at line 1$/m,
  'deep-flow': /nested deeper than 64 levels of \[ \] and \{ \} at line 2$/m,
  'deep-json': /nested deeper than 64 levels of \[ \] and \{ \} at line 1$/m,
  'deep-block': /indented deeper than 200 columns at line 202$/m,
  'compact-sequences': /indented deeper than 200 columns at line 3$/m,
  'alias-bomb': /not valid YAML\/JSON: its aliases \(\*name\) expand more than 100 times/,
};

describe('hostile scenario files: exit 2 naming the file, no stack trace', () => {
  for (const [name, text] of Object.entries(HOSTILE)) {
    it(
      name,
      async () => {
        const file = join(dir, `${name}.yaml`);
        writeFileSync(file, text);
        const { code, output } = await check(file);
        expect(output).toContain(`scenario: error: ${file}:`);
        expect(output).toMatch(SAYS[name]!);
        expect(output).not.toMatch(/fatal|\n\s+at .+:\d+:\d+\)?\n/);
        expect(code).toBe(2);
      },
      90_000,
    );
  }

  it('the same in a manifest file the scenario names: the scenario, the entry and the manifest are named', async () => {
    for (const [name, text] of [
      ['brackets', '['.repeat(2_000_000)],
      ['alias-bomb', `apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n${aliasBomb(9)}\n`],
      ['deep-flow', `${'['.repeat(5000)}${']'.repeat(5000)}\n`],
    ] as const) {
      writeFileSync(join(dir, `manifest-${name}.yaml`), text);
      const file = join(dir, `uses-${name}.yaml`);
      writeFileSync(file, `name: t\n${PODS}policies:\n  - file: manifest-${name}.yaml\nsteps:\n  - name: s\n`);
      const { code, output } = await check(file);
      expect(output).toContain(`scenario: error: ${file}: invalid scenario:`);
      expect(output).toContain(`/policies/0/file (line 6)`);
      expect(output).toContain(`manifest-${name}.yaml`);
      expect(output).not.toMatch(/fatal|\n\s+at .+:\d+:\d+\)?\n/);
      expect(code).toBe(2);
    }
  }, 180_000);
});

describe('the shape bounds', () => {
  it('say the bound and the line', () => {
    expect(shapeProblem(`a:\n  b: ${'['.repeat(MAX_FLOW_DEPTH + 1)}`)).toBe(`nested deeper than ${MAX_FLOW_DEPTH} levels of [ ] and { } at line 2`);
    expect(shapeProblem(`a:\n${' '.repeat(MAX_INDENT + 1)}b: 1\n`)).toBe(`indented deeper than ${MAX_INDENT} columns at line 2`);
    expect(shapeProblem(`a:\n  - ${'- '.repeat(MAX_INDENT)}x\n`)).toBe(`indented deeper than ${MAX_INDENT} columns at line 2`);
    expect(
      shapeProblem(
        `a: [${Array(MAX_VALUES + 1)
          .fill('1')
          .join(', ')}]`,
      ),
    ).toBe(`more than ${MAX_VALUES} values (at line 1); a scenario needs far fewer`);
  });

  it('count what the parser will see: brackets in strings, comments and block scalars do not nest, and closing ones do not hide real nesting', () => {
    const inText = '['.repeat(500);
    expect(shapeProblem(`a: "${inText}"\nb: '${inText}'\nc: x ${inText} # ${inText}\nd: |\n  ${inText}\n  ${inText}\n`)).toBeUndefined();
    expect(shapeProblem(`a: ${'[ "]]]", '.repeat(MAX_FLOW_DEPTH + 1)}`)).toMatch(/^nested deeper than/);
    // Lines of block scalars and flow collections are counted: the bound is reported where it is.
    expect(shapeProblem(`a: |\n  x\n  y\nb: "p\n  q"\nc: [1,\n 2]\nd: ${'['.repeat(MAX_FLOW_DEPTH + 1)}`)).toMatch(/at line 8$/);
  });

  it('let the built-in scenarios and an indented JSON file through', () => {
    const json = JSON.stringify({ name: 't', apps: [{ name: 'a', kind: 'probe', probes: ['a'], labels: { x: 'y' } }], steps: [{ name: 's' }] }, null, 8);
    expect(shapeProblem(json)).toBeUndefined();
  });

  it('a file with thousands of problems looks up the lines of only those it says', () => {
    const parsed = readScenario(HOSTILE['duplicate-steps-small']!, 'dup.yaml');
    let lookups = 0;
    const at = parsed.at;
    parsed.at = (pointer) => (lookups++, at(pointer));
    expect(() => resolveScenario(parsed, { readFile: () => '' })).toThrow(
      /dup\.yaml: invalid scenario:\n {2}\/steps\/1\/name \(line 7\): duplicate step name "s"[^]*… and 8969 more$/,
    );
    expect(lookups).toBeLessThanOrEqual(30);
  });
});
