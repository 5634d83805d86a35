// What the runner publishes to the collector UI (scenarios/run/live-expectations.ts), from the stars
// demo's real plan, without deploying anything: cells named by the collector's resource ids (the
// management UI's own row by its pod name), each probe cell with the URL it checks, the scenario's
// short names, the evaluator's reasons per side, and the runner's view once a step is judged.
import { describe, expect, it } from 'vitest';
import { planApps } from '../../../scenarios/run/deploy-plan.ts';
import { expectStep } from '../../../scenarios/model/expect.ts';
import { collectorNaming, LiveExpectations, type PublishedStep } from '../../../scenarios/run/live-expectations.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import type { Located } from '../../../scenarios/run/observe.ts';
import { cellResults, stepResult } from '../../../scenarios/report/results.ts';

const stars = loadScenario('stars');
const plan = planApps(stars, { probe: ['probe'], collector: ['collector'] }, { isolated: true }, () => '/dev/null');
const located: Located[] = plan.map((app) => ({ app, base: `http://${app.pod.name}.${app.pod.namespace}:${app.port}` }));

describe('live expectations for the collector UI', () => {
  it("names the collector's resources, its own row, the URLs and the short names", () => {
    const naming = collectorNaming(located)!;
    expect(naming.base).toBe('http://management-ui.management-ui:9001');
    expect(naming.self).toEqual({ podId: 'management-ui/management-ui', id: 'management-ui', label: 'UI' });
    expect(naming.labels).toEqual({ frontend: 'F', backend: 'B', client: 'C' });
    expect(collectorNaming(located.filter((l) => l.app.pod.kind !== 'collector'))).toBeUndefined();
  });

  it('publishes a step as it starts (expected cells and reasons) and when it is judged (observed, status)', () => {
    const naming = collectorNaming(located)!;
    // No network: the PUTs fail and say so once; what would be sent is kept in `last`.
    const notes: string[] = [];
    const live = new LiveExpectations({ ...naming, base: 'http://127.0.0.1:1' }, (l) => notes.push(l));
    const step = stars.steps[1]!; // default-deny
    const exp = expectStep(stars, step);
    live.started('stars', exp, stars.steps.length, new Map());
    const doc = live.last as PublishedStep;
    expect(doc).toMatchObject({
      scenario: 'stars',
      phase: 'applying',
      step: { index: 1, name: 'default-deny', total: 5, policies: ['stars/default-deny', 'client/default-deny'] },
      collector: { id: 'management-ui', label: 'UI' },
    });
    expect(doc.cells).toHaveLength(11);
    const fb = doc.cells.find((c) => c.from === 'frontend' && c.to === 'backend')!;
    expect(fb).toMatchObject({ url: 'http://backend.stars:6379/status', port: 6379, protocol: 'TCP', expected: false });
    expect(fb.reasons).toEqual([
      'egress of stars/frontend: not isolated (no policy selects it for egress)',
      'ingress of stars/backend: isolated by stars/default-deny; no rule allows it',
    ]);
    const ui = doc.cells.find((c) => c.from === 'management-ui' && c.to === 'client')!;
    expect(ui).toMatchObject({ expected: false });
    expect(ui.url).toBeUndefined();

    const result = stepResult(exp, stars.pods, cellResults(exp, new Map()), {
      settled: null,
      durationMs: null,
      budgetMs: 2500,
      lastFlipMs: null,
      observed: false,
    });
    live.judged('stars', result);
    const judged = live.last as PublishedStep;
    expect(judged).toMatchObject({ phase: 'judged', outcome: 'not run', step: { index: 1, total: 5 } });
    expect(judged.cells.find((c) => c.from === 'frontend' && c.to === 'backend')).toMatchObject({ status: 'not run', observed: null, reasons: fb.reasons });
    return live.flush().then(() => expect(notes).toHaveLength(1));
  });
});
