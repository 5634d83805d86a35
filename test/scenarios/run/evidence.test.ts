// Evidence per blocked cell, the pure parts (issue 32): drop sites tagged by side and isolating
// policies in the renderer (judged on the nft simulator), the test switch's renderings, the drops
// the runner reads and when it reads them, and how evidence turns into a cell's status and words.
// The same on real packets: test/scenario-evidence-isolated.test.ts.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TaskRules } from '../../../orchestrator/isolation/compile.ts';
import { dropTag, DropTags, parseTestMode, WRONG_RULE_POLICIES } from '../../../orchestrator/isolation/drop-tags.ts';
import { renderTask } from '../../../orchestrator/isolation/render.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { cellDrops, droppedBy, measureStep, parseDrops } from '../../../scenarios/run/drops.ts';
import { decidingRule, positiveControls, stepEvidence } from '../../../scenarios/run/evidence.ts';
import { judgedStatus } from '../../../scenarios/report/evidence.ts';
import { cellResults, failureLine, stepResult, stepText } from '../../../scenarios/report/results.ts';
import type { Observation } from '../../../scenarios/run/observe.ts';
import { evaluateRuleset } from '../../helpers/nft-sim.ts';
import { ROOT } from '../../helpers/process.ts';

const B: TaskRules = {
  taskId: 'b',
  netns: 'b',
  ip: '10.214.4.3',
  gateway: '10.214.4.1',
  ingress: {
    isolated: true,
    isolatedBy: ['x/deny-all', 'x/a-to-b'],
    rules: [{ origin: 'x/a-to-b ingress 0', peer: { kind: 'pods', ips: ['10.214.4.2'], pods: ['x/a'] }, ports: 'any' }],
  },
  egress: { isolated: false, rules: [] },
  restricted: true,
};
const FROM_C = { src: '10.214.4.4', dst: '10.214.4.3', port: 80, protocol: 'TCP' } as const;
const FROM_A = { ...FROM_C, src: '10.214.4.2' };

describe('drop sites in the renderer', () => {
  it("counts a drop under its side's tag of its isolating policies, whatever their order", () => {
    const { text, tags } = renderTask(B);
    const tag = dropTag({ side: 'ingress', policies: ['x/a-to-b', 'x/deny-all'] });
    expect(tags).toEqual([{ tag, rule: { side: 'ingress', policies: ['x/a-to-b', 'x/deny-all'] } }]);
    expect(evaluateRuleset(text, 'input', FROM_C)).toEqual({ verdict: 'drop', counted: true, tag });
    expect(evaluateRuleset(text, 'input', FROM_A)).toMatchObject({ verdict: 'accept', counted: false });
    // Another side, or another set of policies, is another tag.
    expect(dropTag({ side: 'egress', policies: ['x/a-to-b', 'x/deny-all'] })).not.toBe(tag);
    expect(dropTag({ side: 'ingress', policies: ['x/deny-all'] })).not.toBe(tag);
    expect(text).toContain('update @ingress_drops { ip saddr . meta l4proto . th dport . meta mark }');
  });

  it('test switch accept-all: the same rules rendered, nothing dropped or counted', () => {
    const { text, tags } = renderTask(B, 'accept-all');
    expect(text).toContain(`meta mark set 0x${tags[0]!.tag.toString(16).padStart(8, '0')} goto ingress_drop`);
    expect(evaluateRuleset(text, 'input', FROM_C)).toMatchObject({ verdict: 'accept', counted: false });
  });

  it('test switch wrong-rule: drops what it should, counted under a rule no policy has', () => {
    const { text, tags } = renderTask(B, 'wrong-rule');
    const wrong = dropTag({ side: 'ingress', policies: [...WRONG_RULE_POLICIES] });
    expect(tags).toEqual([{ tag: wrong, rule: { side: 'ingress', policies: [...WRONG_RULE_POLICIES] } }]);
    expect(evaluateRuleset(text, 'input', FROM_C)).toEqual({ verdict: 'drop', counted: true, tag: wrong });
    expect(evaluateRuleset(text, 'input', FROM_A).verdict).toBe('accept');
  });

  it('parses the switch, refusing unknown modes by name; remembers a bounded number of tags', () => {
    expect(parseTestMode(undefined)).toBeUndefined();
    expect(parseTestMode('')).toBeUndefined();
    expect(parseTestMode('wrong-rule')).toBe('wrong-rule');
    expect(parseTestMode('accept')).toEqual({ error: 'STARMAP_ISOLATION_TEST_MODE must be one of accept-all, wrong-rule, not "accept"' });
    const tags = new DropTags(2);
    tags.remember(1, { side: 'ingress', policies: ['x/b', 'x/a'] });
    tags.remember(2, { side: 'egress', policies: [] });
    expect(tags.lookup(1)).toEqual({ side: 'ingress', policies: ['x/a', 'x/b'] });
    tags.remember(1, { side: 'ingress', policies: ['x/a', 'x/b'] }); // rendered again: the newest
    tags.remember(3, { side: 'egress', policies: ['x/c'] });
    expect(tags.lookup(2)).toBeUndefined(); // the least recently rendered goes first
    expect(tags.lookup(1)).toBeDefined();
    expect(tags.lookup(undefined)).toBeUndefined();
  });
});

const scenario = loadScenario(join(ROOT, 'test', 'fixtures', 'evidence.yaml'));
const ips = new Map([
  ['default/a', '10.214.4.2'],
  ['default/b', '10.214.4.3'],
  ['default/c', '10.214.4.4'],
]);
const cellOf = (from: string, to: string) => scenario.cells.find((c) => c.from === `default/${from}` && c.to === `default/${to}`)!;

type Drop = { side: 'egress' | 'ingress'; pod: string; peer: string; packets: number; policies?: string[] | null };
/** A drops document as GET /v2/starmap/drops answers it. */
function dropsDoc(drops: Drop[], unreadable: string[] = []) {
  const pods = ['a', 'b', 'c'];
  return {
    tasks: pods.map((p) => ({
      namespace: 'default',
      pod: p,
      ...(unreadable.includes(p) ? { error: 'nft: timed out' } : {}),
      egress: drops
        .filter((d) => d.side === 'egress' && d.pod === p)
        .map((d) => ({ to: d.peer, port: 8080, protocol: 'TCP', packets: d.packets, policies: d.policies === undefined ? ['default/deny-all'] : d.policies })),
      ingress: drops
        .filter((d) => d.side === 'ingress' && d.pod === p)
        .map((d) => ({
          from: d.peer,
          port: 8080,
          protocol: 'TCP',
          packets: d.packets,
          policies: d.policies === undefined ? ['default/deny-all'] : d.policies,
        })),
    })),
  };
}

describe('reading the drops', () => {
  it('reads the counters before the step writes anything and after it settled, so the first checks’ drops are in the window (the droppedBy: null race)', async () => {
    // The counters as the kernel keeps them: c's ingress drops a's SYN as soon as the step's
    // policies are in place — on a loaded machine before a read that starts after the write ends.
    let packets = 0;
    const order: string[] = [];
    const read = async () => {
      order.push('read');
      return parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets }]));
    };
    const { before, after } = await measureStep(read, async () => {
      order.push('write');
      packets += 1; // the first check after the write, dropped at once
      order.push('settled');
    });
    expect(order).toEqual(['read', 'write', 'settled', 'read']);
    expect(droppedBy(before!, after!, cellOf('a', 'c'), ips)).toBe('ingress');
    // Without counters (no drops endpoint) nothing is read after the step either.
    const none = await measureStep(
      async () => undefined,
      async () => 1,
    );
    expect(none).toEqual({ result: 1, before: undefined, after: undefined });
    // The next step starts from this step's "after" (nothing was written since): one read, after it.
    order.length = 0;
    const next = await measureStep(
      read,
      async () => {
        order.push('write');
        packets += 2;
      },
      after,
    );
    expect(order).toEqual(['write', 'read']);
    expect(next.before).toBe(after);
    expect(droppedBy(next.before!, next.after!, cellOf('a', 'c'), ips)).toBe('ingress');
  });

  it("a cell's drops are the deltas of its two sides' elements, per rule; a counter that went down counts whole", () => {
    const before = parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 5 }]));
    const after = parseDrops(
      dropsDoc([
        { side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 7 },
        { side: 'egress', pod: 'a', peer: '10.214.4.4', packets: 2, policies: ['default/a-egress-to-b'] },
        { side: 'ingress', pod: 'c', peer: '10.214.4.3', packets: 9 }, // b -> c: another cell
      ]),
    );
    expect(cellDrops(before, after, cellOf('a', 'c'), ips)).toEqual([
      { side: 'egress', pod: 'default/a', policies: ['default/a-egress-to-b'], packets: 2 },
      { side: 'ingress', pod: 'default/c', policies: ['default/deny-all'], packets: 2 },
    ]);
    expect(droppedBy(before, after, cellOf('a', 'c'), ips)).toBe('both');
    const reset = parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 1 }]));
    expect(cellDrops(before, reset, cellOf('a', 'c'), ips)).toEqual([{ side: 'ingress', pod: 'default/c', policies: ['default/deny-all'], packets: 1 }]);
    expect(parseDrops(dropsDoc([], ['b'])).unreadable).toEqual(new Set(['default/b']));
  });
});

describe('judging a blocked cell by its evidence', () => {
  const exp = expectStep(scenario, scenario.steps[0]!, ips);
  const exp2 = expectStep(scenario, scenario.steps[1]!, ips);
  const seen = (e = exp) => new Map(e.cells.map((c) => [c.cell.key, c.expected]));

  it('the deciding rule: the source egress when it denies, else the destination ingress, with the isolating policies', () => {
    const at = (e: typeof exp, from: string, to: string) => decidingRule(e.cells.find((c) => c.cell.key === cellOf(from, to).key)!);
    expect(at(exp, 'a', 'c')).toEqual({ side: 'ingress', pod: 'default/c', policies: ['default/deny-all'] });
    expect(at(exp, 'c', 'b')).toEqual({ side: 'ingress', pod: 'default/b', policies: ['default/a-to-b', 'default/deny-all'] });
    expect(at(exp2, 'a', 'c')).toEqual({ side: 'egress', pod: 'default/a', policies: ['default/a-egress-to-b'] });
    expect(at(exp, 'a', 'b')).toBeNull();
  });

  it('positive controls: per destination and port, a source observed reaching it', () => {
    const controls = positiveControls(exp, seen());
    expect(controls.get('default/b@8080/TCP')).toBe('default/a');
    // Nobody else reaches c: c reaching itself over loopback (never filtered) proves nothing.
    expect(controls.has('default/c@8080/TCP')).toBe(false);
    const observed = new Map([...seen()].map(([k, v]) => [k, k === cellOf('a', 'b').key ? null : v]));
    expect(positiveControls(exp, observed).has('default/b@8080/TCP')).toBe(false);
  });

  const none = parseDrops(dropsDoc([]));
  const key = cellOf('a', 'c').key;

  it("proven only by the deciding rule's counter; another rule's is a mismatch of its own; none is not enforced", () => {
    const right = parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 1 }]));
    const wrong = parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 1, policies: ['(test switch: wrong-rule)'] }]));
    const unknown = parseDrops(dropsDoc([{ side: 'ingress', pod: 'c', peer: '10.214.4.2', packets: 1, policies: null }]));
    expect(stepEvidence(exp, seen(), none, right, ips).get(key)).toEqual({
      verdict: 'proven',
      rule: { side: 'ingress', pod: 'default/c', policies: ['default/deny-all'] },
      drops: [{ side: 'ingress', pod: 'default/c', policies: ['default/deny-all'], packets: 1 }],
      positiveControl: null,
    });
    expect(stepEvidence(exp, seen(), none, wrong, ips).get(key)!.verdict).toBe('dropped by another rule');
    expect(stepEvidence(exp, seen(), none, unknown, ips).get(key)!.verdict).toBe('dropped by another rule');
    expect(stepEvidence(exp, seen(), none, none, ips).get(key)!.verdict).toBe('not enforced');
    expect(stepEvidence(exp, seen(), none, parseDrops(dropsDoc([], ['c'])), ips).get(key)!.verdict).toBe('counters unreadable');
    // Only cells judged blocked and observed carry evidence.
    expect(stepEvidence(exp, seen(), none, none, ips).has(cellOf('a', 'b').key)).toBe(false);
    expect(stepEvidence(exp, new Map(), none, none, ips).size).toBe(0);
  });

  it('statuses: not enforced and dropped by another rule fail, apart from computed != observed', () => {
    const ev = (verdict: 'proven' | 'not enforced' | 'dropped by another rule' | 'counters unreadable') => ({
      verdict,
      rule: null,
      drops: [],
      positiveControl: null,
    });
    expect(judgedStatus(false, false, ev('proven'))).toBe('pass');
    expect(judgedStatus(false, true, ev('proven'))).toBe('computed != observed');
    expect(judgedStatus(false, true, ev('not enforced'))).toBe('not enforced');
    expect(judgedStatus(false, false, ev('not enforced'))).toBe('not enforced');
    expect(judgedStatus(false, false, ev('dropped by another rule'))).toBe('dropped by another rule');
    expect(judgedStatus(false, false, ev('counters unreadable'))).toBe('no value');
    expect(judgedStatus(false, false, undefined)).toBe('pass'); // no counters here: as before
    expect(judgedStatus(true, false, undefined)).toBe('computed != observed');
  });

  it('the step fails with the mismatch in words, and says which blocked ports have no positive control', () => {
    const obs = (allowed: boolean): Observation => ({
      allowed,
      reason: allowed ? 'ok' : 'timeout',
      checkedAt: new Date(Date.now() + 1000).toISOString(),
      changedAt: null,
    });
    const observed = new Map(exp.cells.map((c) => [c.cell.key, obs(c.expected!)]));
    const after = parseDrops(
      dropsDoc(
        ['a', 'b', 'c'].flatMap((to) =>
          ['a', 'b', 'c'].map((from) => ({
            side: 'ingress' as const,
            pod: to,
            peer: ips.get(`default/${from}`)!,
            packets: 1,
            policies: ['(test switch: wrong-rule)'],
          })),
        ),
      ),
    );
    const evidence = stepEvidence(exp, seen(), none, after, ips);
    const cells = cellResults(exp, new Map(), { observed, fresh: new Set(observed.keys()), changedAfterMs: new Map(), droppedBy: new Map(), evidence });
    const step = stepResult(exp, scenario.pods, cells, { settled: true, durationMs: 1, budgetMs: 2500, lastFlipMs: null, observed: true });
    expect(step).toMatchObject({
      outcome: 'fail',
      failure: 'dropped by another rule',
      counts: { otherRule: 5, notEnforced: 0, computedNotObserved: 0, pass: 4 },
    });
    const ac = cells.find((c) => c.from === 'default/a' && c.to === 'default/c')!;
    expect(failureLine(ac)).toBe(
      'dropped by another rule: default/a -> default/c 8080/TCP: computed: dropped by default/deny-all ingress of default/c; observed: dropped by (test switch: wrong-rule) ingress of default/c (1 packet); no positive control',
    );
    const cb = cells.find((c) => c.from === 'default/c' && c.to === 'default/b')!;
    expect(cb.evidence!.positiveControl).toBe('default/a');
    expect(stepText(step, 2)).toContain(
      'no positive control: default/a 8080/TCP, default/c 8080/TCP (nothing reached them in this step; a dead server looks exactly like a policy drop)',
    );
  });
});
