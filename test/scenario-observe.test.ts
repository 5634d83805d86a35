// The scenario runner's view of the agents, on loopback with real probe processes started from
// the planned app definitions (no orchestrator): observation, settling, and per-edge timing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planApps } from '../scenarios/deploy-plan.ts';
import { edgeKey, expectedVerdicts, scenarioEdges, type Verdict } from '../scenarios/matrix.ts';
import { parseScenario } from '../scenarios/model.ts';
import { observe, type Located } from '../scenarios/observe.ts';
import { settle } from '../scenarios/settle.ts';
import { NODE, ROOT, freePort, start, stopAll, tempDir, waitForHttp, type Running } from './helpers/process.ts';

afterAll(stopAll);

describe('observing a scenario on loopback', () => {
  it('sees every edge, then the edges of a stopped probe turn to deny, with timings', async () => {
    const s = parseScenario(readFileSync(join(ROOT, 'scenarios', 'builtin', 'matrix-3x3.yaml'), 'utf8'));
    const ports = new Map<string, number>();
    for (const a of s.apps) ports.set(a.name, await freePort());
    const work = tempDir('starmap-scn-');
    const plan = planApps(s, { probe: [NODE, 'probe/main.ts'], collector: [NODE, 'collector/main.ts'] }, { isolated: false, ports }, (c) => {
      const f = join(work, 'resources.json');
      writeFileSync(f, c);
      return f;
    });
    const procs = new Map<string, Running>();
    for (const p of plan) {
      const args = p.definition.args as string[];
      expect(p.definition.requirePorts).toBe(true);
      procs.set(p.name, start(args[0]!, args.slice(1)));
    }
    for (const p of plan) await waitForHttp(`http://127.0.0.1:${p.port}/healthz`);

    const located: Located[] = plan.map((p) => ({
      app: p,
      base: `http://127.0.0.1:${p.port}`,
      targets: new Map((s.apps.find((a) => a.name === p.name) as { probes: string[] }).probes.map((t) => [`http://127.0.0.1:${ports.get(t)}/status`, t])),
    }));
    // The plan knows the same targets (the runner uses them rather than parsing --urls back).
    for (const l of located) expect(l.app.targets).toEqual(l.targets);
    const edges = scenarioEdges(s);
    const allow = expectedVerdicts(s, s.steps[0]!, 0);
    const first = await settle({ edges, expected: allow, observe: () => observe(located), appliedAt: Date.now(), deadlineMs: 15_000, holdMs: 500, pollMs: 100 });
    expect(first.settled).toBe(true);
    expect(first.comparison).toMatchObject({ wrong: 0, noValue: 0, correct: 9 });

    // Stop c: a→c and b→c become refused; c's own edges have no value (ignored here).
    await procs.get('c')!.stop();
    const expected = new Map<string, Verdict>([...allow].filter(([k]) => !k.startsWith('c->')));
    expected.set(edgeKey('a', 'c'), 'deny');
    expected.set(edgeKey('b', 'c'), 'deny');
    const appliedAt = Date.now();
    const located2 = located.filter((l) => l.app.name !== 'c');
    const second = await settle({ edges: edges.filter((e) => e.from !== 'c'), expected, observe: () => observe(located2), appliedAt, deadlineMs: 15_000, holdMs: 500, pollMs: 100, previous: first.observed });
    expect(second.settled).toBe(true);
    expect(second.observed.get(edgeKey('a', 'c'))).toMatchObject({ verdict: 'deny', reason: 'refused' });
    // Only the two edges that flipped have a timing, within a probe cycle or so.
    expect([...second.changedAfterMs.keys()].sort()).toEqual(['a->c', 'b->c']);
    for (const ms of second.changedAfterMs.values()) expect(ms).toBeLessThan(5000);

    // A deliberately wrong expectation does not settle and names the mismatching edge.
    const wrong = new Map(expected);
    wrong.set(edgeKey('a', 'b'), 'deny');
    const third = await settle({ edges: edges.filter((e) => e.from !== 'c'), expected: wrong, observe: () => observe(located2), appliedAt: Date.now(), deadlineMs: 1500, holdMs: 500, pollMs: 100 });
    expect(third.settled).toBe(false);
    expect(third.comparison.mismatches).toEqual([{ from: 'a', to: 'b', expected: 'deny', observed: 'allow', reason: 'ok' }]);
  }, 60_000);
});
