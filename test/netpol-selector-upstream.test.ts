// The label selector (shared/netpol/selector.ts) against upstream's own cases: it is the one piece
// the evaluator and the nftables compiler share, so a mistake in it would be made by both and go
// unseen by their comparison on packets. The cases are Kubernetes' (k8s.io/apimachinery
// pkg/labels and pkg/apis/meta/v1 tests), transcribed into test/fixtures/label-selector-upstream.json.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { labelsInclude, requirementHolds, selectorMatches } from '../shared/netpol/selector.ts';
import type { LabelSelector } from '../shared/netpol/types.ts';

interface UpstreamCase {
  source: string;
  upstream: string;
  selector: LabelSelector;
  labels: Record<string, string>;
  matches: boolean;
}

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'label-selector-upstream.json'), 'utf8')) as {
  cases: UpstreamCase[];
};

describe("label selector: upstream's cases", () => {
  it('has every case of the fixture', () => {
    expect(fixture.cases.length).toBeGreaterThanOrEqual(39);
  });

  it.each(fixture.cases.map((c) => [`${c.source}: ${c.upstream}`, c] as const))('%s', (_name, c) => {
    expect(selectorMatches(c.selector, c.labels)).toBe(c.matches);
  });

  it('reads labels as own properties only (a label named like an Object.prototype member is absent)', () => {
    const labels = Object.create(null) as Record<string, string>;
    expect(selectorMatches({ matchLabels: { constructor: 'x' } }, {})).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'toString', operator: 'Exists' }] }, {})).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'toString', operator: 'NotIn', values: ['a'] }] }, labels)).toBe(true);
  });

  it('holds each requirement on its own as the selector does (NotIn matches a missing key)', () => {
    expect(requirementHolds({ key: 'x', operator: 'NotIn', values: ['a'] }, {})).toBe(true);
    expect(requirementHolds({ key: 'x', operator: 'In', values: ['a'] }, {})).toBe(false);
    expect(requirementHolds({ key: 'x', operator: 'Exists' }, { x: '' })).toBe(true);
    expect(requirementHolds({ key: 'x', operator: 'DoesNotExist' }, { x: '' })).toBe(false);
  });

  it("matches the orchestrator dialect's `labels` subset as matchLabels", () => {
    for (const c of fixture.cases) {
      const onlyLabels = c.selector.matchExpressions === undefined;
      if (onlyLabels) expect(labelsInclude(c.selector.matchLabels ?? {}, c.labels), c.upstream).toBe(c.matches);
    }
  });
});
