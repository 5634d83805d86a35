// `scenario diff BASE HEAD --isolation=netns`, on packets (issue 30, "Proven on packets"): BASE
// (test/fixtures/diff-netns/base.yaml, a may reach b) is deployed and observed, HEAD (b loses the
// label the allow rule selects, c gains it) applied in place and observed again. A change that
// closes one flow and opens another, both observed with their convergence times; a no-op change;
// and the orchestrator's test switch breaking the data plane (accept-all: nothing dropped, so no
// flip is made; wrong-rule: drops counted under a rule no policy has) failing the command, naming
// the cells. Root + nftables; namespaces prefixed smdn on 10.214.30.0/24.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { afterAll, describe, expect, it } from 'vitest';
import { ScenarioDiffSchema, type ScenarioDiff } from '../../../scenarios/model/diff-schema.ts';
import { isolationLeftovers, isolationSkip } from '../../helpers/isolation.ts';
import { NODE, ROOT, runToEnd, stopAll, tempDir } from '../../helpers/process.ts';

const skipReason = isolationSkip('scenario diff --isolation=netns');
const PREFIX = 'smdn';
const SUBNET = '10.214.30.0/24';
const fixture = (name: string) => join(ROOT, 'test', 'fixtures', 'diff-netns', name);

afterAll(stopAll);

async function diff(head: string, opts: { mode?: string; extra?: string[] } = {}) {
  const dir = tempDir('starmap-diff-netns-');
  const json = join(dir, 'diff.json');
  const approve = join(dir, 'approved-flips.yaml');
  writeFileSync(approve, '- deny: default/a -> default/b:8080\n- allow: default/a -> default/c:8080\n');
  const files = { json, md: join(dir, 'diff.md'), junit: join(dir, 'diff.xml'), html: join(dir, 'diff.html') };
  const { code, output } = await runToEnd(
    NODE,
    [
      'scenarios/main.ts',
      'diff',
      fixture('base.yaml'),
      fixture(head),
      '--isolation=netns',
      `--netns-prefix=${PREFIX}`,
      `--netns-subnet=${SUBNET}`,
      `--report-json=${files.json}`,
      `--report-md=${files.md}`,
      `--report-junit=${files.junit}`,
      `--report-html=${files.html}`,
      ...(head === 'head.yaml' ? [`--approve=${approve}`] : []),
      ...(opts.extra ?? []),
    ],
    { timeoutMs: 200_000, env: { ...process.env, STARMAP_ISOLATION_TEST_MODE: opts.mode ?? '' } },
  );
  const report = JSON.parse(readFileSync(json, 'utf8')) as ScenarioDiff;
  expect([...Value.Errors(ScenarioDiffSchema, report)]).toEqual([]);
  const read = (f: string) => readFileSync(f, 'utf8');
  return { code, output, report, md: read(files.md), junit: read(files.junit), html: read(files.html) };
}

describe.skipIf(skipReason !== undefined)('scenario diff --isolation=netns, on packets', () => {
  it('a change that closes a -> b and opens a -> c: both flips observed as computed, each with its convergence time; approved, exit 0', async () => {
    const { code, output, report, md, junit, html } = await diff('head.yaml');
    expect(code, output).toBe(0);
    expect(report.observation).toMatchObject({
      isolation: 'netns',
      outcome: 'pass',
      counts: { flips: 2, asComputed: 2, notObserved: 0, faults: 0 },
      faults: [],
    });
    const flips = new Map(report.flips.map((f) => [`${f.from}>${f.to}`, f]));
    expect(flips.get('default/a>default/b')).toMatchObject({
      before: { allowed: true },
      after: { allowed: false },
      observed: { before: true, after: false, status: 'as computed' },
    });
    expect(flips.get('default/a>default/c')).toMatchObject({
      before: { allowed: false },
      after: { allowed: true },
      observed: { before: false, after: true, status: 'as computed' },
    });
    for (const f of report.flips) expect(f.observed!.convergedAfterMs, f.key).toBeGreaterThanOrEqual(0);
    expect(output).toMatch(
      /default\/a -> default\/b 8080\/TCP {2}allowed -> blocked\n.*\n.*\n {4}observed allowed -> blocked \(as computed, converged after \d+\.\d s\)/,
    );
    expect(output).toMatch(/on packets \(isolation netns, HEAD applied in place\): PASS: 2 of 2 flips observed as computed, no enforcement fault/);
    expect(md).toMatch(/\| from \| to \| port \| change \| before \| after \| observed \|/);
    expect(md).toMatch(/observed blocked -&gt; allowed \(as computed, converged after \d+\.\d s\)/);
    expect(junit).toMatch(/observed allowed -&gt; blocked \(as computed/);
    expect(junit).not.toMatch(/<failure/);
    expect(html).toMatch(/PASS: 2 of 2 flips observed as computed/);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('a no-op change (the same policies in another order): no flips, every cell as computed on both sides, exit 0', async () => {
    const { code, output, report } = await diff('noop.yaml');
    expect(code, output).toBe(0);
    expect(report.counts.flips).toBe(0);
    expect(report.observation).toMatchObject({ outcome: 'pass', counts: { flips: 0, faults: 0 }, faults: [] });
    expect(output).toMatch(/PASS: 0 of 0 flips observed as computed, no enforcement fault/);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('accept-all (nothing dropped): the flips are not made, and the command exits 1 naming each cell', async () => {
    const { code, output, report, junit } = await diff('head.yaml', { mode: 'accept-all', extra: ['--step-timeout=3'] });
    expect(code, output).toBe(1);
    expect(report.observation!.outcome).toBe('fail');
    const faults = new Map(report.observation!.faults.map((f) => [`${f.from}>${f.to}`, f]));
    expect(faults.get('default/a>default/b')).toMatchObject({
      kind: 'flip not made',
      computed: { before: true, after: false },
      observed: { before: true, after: true },
    });
    expect(faults.get('default/a>default/c')).toMatchObject({
      kind: 'flip not made',
      computed: { before: false, after: true },
      observed: { before: true, after: true },
    });
    // Cells blocked on both sides were allowed on both: not as computed, but no flip either way.
    expect(faults.get('default/b>default/a')).toMatchObject({ kind: 'not as computed', side: 'both' });
    expect(output).toMatch(
      /flip not made: default\/a -> default\/b 8080\/TCP: the policies say allowed -> blocked, the packets were allowed at BASE and allowed at HEAD/,
    );
    expect(output).toMatch(/on packets .*: FAIL: 0 of 2 flips observed as computed/);
    expect(junit).toMatch(/<failure message="flip not made" type="enforcement fault">/);
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);

  it('wrong-rule (drops counted under a rule no policy has): the closed flow is blocked, but not by the rule that decides it; exit 1 naming the cell', async () => {
    const { code, output, report } = await diff('head.yaml', { mode: 'wrong-rule' });
    expect(code, output).toBe(1);
    expect(report.observation!.outcome).toBe('fail');
    const ab = report.flips.find((f) => f.from === 'default/a' && f.to === 'default/b')!;
    expect(ab.observed).toMatchObject({ before: true, after: false, status: 'not as computed' });
    const fault = report.observation!.faults.find((f) => f.key === ab.key)!;
    expect(fault).toMatchObject({ kind: 'not as computed', side: 'head' });
    expect(output).toMatch(
      /not as computed: at HEAD: dropped by another rule: default\/a -> default\/b 8080\/TCP: computed: dropped by default\/deny-all ingress of default\/b; observed: dropped by \(test switch: wrong-rule\) ingress of default\/b/,
    );
    expect(isolationLeftovers(PREFIX, [SUBNET])).toEqual([]);
  }, 240_000);
});

describe('scenario diff --isolation=netns, bad input', () => {
  it('a pod that is another workload on HEAD cannot be applied in place: exit 2 naming the pod, nothing deployed', () => {
    const head = join(tempDir('starmap-diff-netns-'), 'head.yaml');
    writeFileSync(
      head,
      readFileSync(fixture('head.yaml'), 'utf8').replace(
        /\{ name: b, kind: probe.*\}/,
        "{ name: b, kind: app, labels: { pod: b }, port: 8080, cmd: 'sleep 600' }",
      ),
    );
    const r = spawnSync(
      NODE,
      ['scenarios/main.ts', 'diff', fixture('base.yaml'), head, '--isolation=netns', `--netns-prefix=${PREFIX}`, `--netns-subnet=${SUBNET}`],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /--isolation=netns: pod default\/b has kind "probe" on BASE and "app" on HEAD: a different workload, which cannot be applied in place/,
    );
    expect(r.stdout).not.toMatch(/starting the orchestrator/);
  });

  it('a report that cannot be written is said before anything is deployed: exit 2 naming the flag', () => {
    const missing = join(tempDir('starmap-diff-netns-'), 'no-such-dir', 'diff.md');
    const r = spawnSync(
      NODE,
      [
        'scenarios/main.ts',
        'diff',
        fixture('base.yaml'),
        fixture('head.yaml'),
        '--isolation=netns',
        `--netns-prefix=${PREFIX}`,
        `--netns-subnet=${SUBNET}`,
        `--report-md=${missing}`,
      ],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/--report-md: no directory .*no-such-dir/);
    expect(r.stdout).not.toMatch(/starting the orchestrator/);
  });
});
