// The scenario runner's view of the agents, on loopback with real probe processes started from
// the planned app definitions (no orchestrator): observation per cell, settling on values checked
// since the change, and per-cell timing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assignHostPorts, planApps } from '../../../scenarios/run/deploy-plan.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { observe, type Located } from '../../../scenarios/run/observe.ts';
import { cellKey } from '../../../scenarios/model/resolve.ts';
import { settle } from '../../../scenarios/run/settle.ts';
import { NODE, freePort, start, stopAll, tempDir, waitForHttp, type Running } from '../../helpers/process.ts';

afterAll(stopAll);

describe('observing a scenario on loopback', () => {
  it('sees every cell, then the cells of a stopped probe turn blocked, with timings', async () => {
    const s = loadScenario('matrix-3x3');
    const free: number[] = [];
    for (let i = 0; i < s.pods.length; i++) free.push(await freePort());
    const hostPorts = assignHostPorts(s.pods, () => free.shift()!);
    const work = tempDir('starmap-scn-');
    const plan = planApps(s, { probe: [NODE, 'probe/main.ts'], collector: [NODE, 'collector/main.ts'] }, { isolated: false, hostPorts }, (c) => {
      const f = join(work, 'resources.json');
      writeFileSync(f, c);
      return f;
    });
    const procs = new Map<string, Running>();
    for (const p of plan) {
      const args = p.definition.args as string[];
      expect(p.definition.requirePorts).toBe(true);
      expect(p.definition.labels).toMatchObject({ 'starmap.namespace': 'default', 'starmap.pod': p.pod.name, 'starmap.scenario': 'matrix-3x3' });
      procs.set(p.pod.name, start(args[0]!, args.slice(1)));
    }
    for (const p of plan) await waitForHttp(`http://127.0.0.1:${p.port}/healthz`);
    // The plan knows which target URL is which cell.
    const a = plan.find((p) => p.pod.name === 'a')!;
    expect(a.targets.get(`http://127.0.0.1:${hostPorts.get('default/b')!.get(8080)}/status`)?.key).toBe(cellKey('default/a', 'default/b', 8080, 'TCP'));

    const located: Located[] = plan.map((p) => ({ app: p, base: `http://127.0.0.1:${p.port}` }));
    const keys = s.cells.map((c) => c.key);
    const allow = new Map(keys.map((k) => [k, true]));
    const first = await settle({ cells: keys, expected: allow, observe: () => observe(located), appliedAt: Date.now(), deadlineMs: 15_000, pollMs: 100 });
    expect(first.settled).toBe(true);
    expect(first.fresh.size).toBe(9);

    // Stop c: a→c and b→c become refused; c's own cells are no longer observed.
    await procs.get('c')!.stop();
    const toC = [cellKey('default/a', 'default/c', 8080, 'TCP'), cellKey('default/b', 'default/c', 8080, 'TCP')];
    const remaining = keys.filter((k) => !k.startsWith('default/c>'));
    const expected = new Map(remaining.map((k) => [k, !toC.includes(k)]));
    const located2 = located.filter((l) => l.app.pod.name !== 'c');
    const appliedAt = Date.now();
    const second = await settle({
      cells: remaining,
      expected,
      observe: () => observe(located2),
      appliedAt,
      deadlineMs: 15_000,
      pollMs: 100,
      previous: first.observed,
    });
    expect(second.settled).toBe(true);
    expect(second.observed.get(toC[0]!)).toMatchObject({ allowed: false, reason: 'refused' });
    // Only the two cells that flipped have a timing.
    expect([...second.changedAfterMs.keys()].sort()).toEqual(toC.sort());
    // Every cell has a convergence time: 0 for the cells that kept their value; for the two, their
    // flip (as the probe saw it, which may be before the runner looked, even before appliedAt).
    expect([...second.convergedAfterMs.keys()].sort()).toEqual([...remaining].sort());
    // (A check that timed out under load and recovered is a flip too: then its recovery counts.)
    for (const k of remaining.filter((x) => !toC.includes(x)))
      expect(second.convergedAfterMs.get(k)).toBe(Math.max(0, Date.parse(second.observed.get(k)!.changedAt!) - appliedAt));
    for (const k of toC) expect(second.convergedAfterMs.get(k)).toBeLessThanOrEqual(second.changedAfterMs.get(k)!);

    // A deliberately wrong expectation does not settle; the cell stays as observed.
    const wrong = new Map(expected);
    wrong.set(cellKey('default/a', 'default/b', 8080, 'TCP'), false);
    const third = await settle({ cells: remaining, expected: wrong, observe: () => observe(located2), appliedAt: Date.now(), deadlineMs: 1500, pollMs: 100 });
    expect(third.settled).toBe(false);
    expect(third.observed.get(cellKey('default/a', 'default/b', 8080, 'TCP'))).toMatchObject({ allowed: true, reason: 'ok' });
  }, 60_000);

  it('an observation checked before the change does not count', async () => {
    const stale = { allowed: true, reason: 'ok', checkedAt: new Date(Date.now() - 5000).toISOString(), changedAt: null };
    const r = await settle({
      cells: ['k'],
      expected: new Map([['k', true]]),
      observe: async () => new Map([['k', stale]]),
      appliedAt: Date.now(),
      deadlineMs: 300,
      pollMs: 50,
    });
    expect(r.settled).toBe(false);
    expect(r.fresh.size).toBe(0);
  });
});
