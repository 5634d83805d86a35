// `scenario explain` through the real command (a child process): it computes one connection and
// deploys nothing, so a scenario is bounded as `scenario check` bounds it (model/limits.ts
// CHECK_LIMITS), not by the limits of a run on packets.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_PODS, MAX_PODS_COMPUTED } from '../../../scenarios/model/limits.ts';
import { NODE, removeTempDirs, ROOT, tempDir } from '../../helpers/process.ts';

afterAll(removeTempDirs);

function scenario(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(NODE, ['scenarios/main.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A model of `namespaces × 16` pods serving 80/TCP, with one policy isolating b's ingress to a's pods. */
function bigScenario(namespaces: number): string {
  const ns = Array.from({ length: namespaces }, (_, i) => `n${i}`);
  const pods = Array.from({ length: 16 }, (_, i) => `p${i}`);
  const file = join(tempDir('explain-limits'), 'big.yaml');
  writeFileSync(
    file,
    [
      'name: big',
      'model:',
      `  namespaces: [${ns.join(', ')}]`,
      `  pods: [${pods.join(', ')}]`,
      '  ports: [80]',
      '  protocols: [TCP]',
      'policies:',
      '  only-n0:',
      '    selector: {group: n1}',
      '    ingress: [{from: [{group: n0}]}]',
      'steps:',
      '  - name: isolated',
      '    policies: [only-n0]',
      '    expect: computed',
      '',
    ].join('\n'),
  );
  return file;
}

describe('scenario explain bounds its input as a computed check, not as a run', () => {
  it(`more pods than a run takes (${MAX_PODS}) but fewer than check computes (${MAX_PODS_COMPUTED}): explained`, () => {
    const file = bigScenario(8); // 128 pods, 16,256 cells: past both bounds of a run
    expect(8 * 16).toBeGreaterThan(MAX_PODS);
    const allowed = scenario(['explain', file, '--step', 'isolated', '--from', 'n0/p1', '--to', 'n1/p2:80/TCP']);
    expect(allowed.stderr).toBe('');
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(/allowed/i);
    const blocked = scenario(['explain', file, '--step', 'isolated', '--from', 'n2/p1', '--to', 'n1/p2:80/TCP']);
    expect(blocked.code).toBe(0);
    expect(blocked.stdout).toMatch(/blocked|denied/i);
  });

  it('check and explain take the same scenario: check computes it too', () => {
    const file = bigScenario(8);
    const r = scenario(['check', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
