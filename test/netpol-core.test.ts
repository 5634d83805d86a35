// The evaluator's building blocks: addresses and CIDR blocks, label selectors, {{ip ns/pod}}.
import { describe, expect, it } from 'vitest';
import { blockContains, parseAddress, parseBlock } from '../shared/netpol/cidr.ts';
import { cidrTexts, placeholderFor, resolvePolicy, substitute, templateRefs } from '../shared/netpol/ip-template.ts';
import { selectorMatches, selectorText } from '../shared/netpol/selector.ts';
import { np } from './helpers/netpol-model.ts';

describe('addresses and blocks', () => {
  it.each([
    ['10.0.0.1', 4, 0x0a000001n],
    ['::1', 6, 1n],
    ['fd00::2:5', 6, (0xfd00n << 112n) | (2n << 16n) | 5n],
    ['::ffff:10.0.0.1', 6, (0xffffn << 32n) | 0x0a000001n],
    ['2001:db8:0:0:0:0:0:1', 6, (0x2001n << 112n) | (0xdb8n << 96n) | 1n],
  ])('parses %s', (text, family, value) => {
    expect(parseAddress(text)).toEqual({ family, value });
  });

  it.each(['10.0.0', '10.0.0.256', '010.0.0.1', '1::2::3', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', 'host', '1:2:3:4:5:6:7::8:9'])('refuses %s', (text) => {
    expect(parseAddress(text)).toBeUndefined();
  });

  it('ignores host bits, as the v1 API accepted them', () => {
    expect(parseBlock('10.1.2.3/8')).toEqual(parseBlock('10.0.0.0/8'));
    expect(blockContains(parseBlock('10.1.2.3/8')!, parseAddress('10.200.0.1')!)).toBe(true);
    expect(blockContains(parseBlock('10.1.2.3/8')!, parseAddress('11.0.0.1')!)).toBe(false);
    expect(blockContains(parseBlock('fd00::2:5/112')!, parseAddress('fd00::2:ffff')!)).toBe(true);
    expect(blockContains(parseBlock('fd00::2:5/112')!, parseAddress('fd00::3:1')!)).toBe(false);
  });

  it('/0 holds every address of its family and none of the other', () => {
    expect(blockContains(parseBlock('0.0.0.0/0')!, parseAddress('203.0.113.9')!)).toBe(true);
    expect(blockContains(parseBlock('0.0.0.0/0')!, parseAddress('::1')!)).toBe(false);
    expect(blockContains(parseBlock('::/0')!, parseAddress('10.0.0.1')!)).toBe(false);
  });

  it.each(['10.0.0.0', '10.0.0.0/33', '::/129', '10.0.0.0/x', '/8'])('refuses the block %s', (text) => {
    expect(parseBlock(text)).toBeUndefined();
  });
});

describe('label selectors', () => {
  const labels = { pod: 'a', tier: 'web' };
  it.each([
    [{}, true],
    [{ matchLabels: {} }, true],
    [{ matchLabels: { pod: 'a' } }, true],
    [{ matchLabels: { pod: 'a', tier: 'db' } }, false],
    [{ matchExpressions: [{ key: 'pod', operator: 'In' as const, values: ['a', 'b'] }] }, true],
    [{ matchExpressions: [{ key: 'pod', operator: 'In' as const, values: ['b'] }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'In' as const, values: ['a'] }] }, false],
    [{ matchExpressions: [{ key: 'pod', operator: 'NotIn' as const, values: ['b'] }] }, true],
    [{ matchExpressions: [{ key: 'pod', operator: 'NotIn' as const, values: ['a'] }] }, false],
    // NotIn matches pods that do not have the key at all.
    [{ matchExpressions: [{ key: 'missing', operator: 'NotIn' as const, values: ['a'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'Exists' as const }] }, true],
    [{ matchExpressions: [{ key: 'missing', operator: 'Exists' as const }] }, false],
    [{ matchExpressions: [{ key: 'missing', operator: 'DoesNotExist' as const }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'DoesNotExist' as const }] }, false],
    // matchLabels and matchExpressions together are AND.
    [{ matchLabels: { pod: 'a' }, matchExpressions: [{ key: 'tier', operator: 'In' as const, values: ['db'] }] }, false],
  ])('%j → %s', (sel, want) => {
    expect(selectorMatches(sel, labels)).toBe(want);
  });

  it('an empty value is a value', () => {
    expect(selectorMatches({ matchLabels: { pod: '' } }, { pod: '' })).toBe(true);
    expect(selectorMatches({ matchLabels: { pod: '' } }, {})).toBe(false);
  });

  it('prints selectors kubectl style', () => {
    expect(selectorText({})).toBe('{}');
    expect(
      selectorText({
        matchLabels: { a: 'b' },
        matchExpressions: [
          { key: 'c', operator: 'NotIn', values: ['d', 'e'] },
          { key: 'f', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('a=b,c notin (d,e),!f');
  });
});

describe('{{ip ns/pod}}', () => {
  const ips: Record<string, string> = { 'x/b': '10.0.1.2' };
  it('finds and substitutes references', () => {
    expect(templateRefs('{{ip x/b}}/32')).toEqual(['x/b']);
    expect(templateRefs('{{ ip  y/c }}/24')).toEqual(['y/c']);
    expect(substitute('{{ip x/b}}/32', (r) => ips[r])).toBe('10.0.1.2/32');
    expect(substitute('{{ip y/c}}/32', (r) => ips[r])).toBeUndefined();
    expect(placeholderFor('{{ip x/b}}/32')).toBe('192.0.2.1/32');
    expect(placeholderFor('{{ip x/b}}/128')).toBe('2001:db8::1/128');
  });

  it('resolves a policy, leaving the original untouched, and refuses to half-resolve', () => {
    const p = np('x', 'p', {
      egress: [{ to: [{ ipBlock: { cidr: '{{ip x/b}}/8', except: ['{{ip x/b}}/32'] } }] }],
      ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }],
    });
    expect(cidrTexts(p).map((c) => c.path)).toEqual([
      '/spec/ingress/0/from/0/ipBlock/cidr',
      '/spec/egress/0/to/0/ipBlock/cidr',
      '/spec/egress/0/to/0/ipBlock/except/0',
    ]);
    const r = resolvePolicy(p, (ref) => ips[ref]);
    expect(r.spec.egress![0]!.to![0]!.ipBlock).toEqual({ cidr: '10.0.1.2/8', except: ['10.0.1.2/32'] });
    expect(p.spec.egress![0]!.to![0]!.ipBlock!.cidr).toBe('{{ip x/b}}/8');
    expect(() => resolvePolicy(p, () => undefined)).toThrow(/x\/p: the address of x\/b is not known/);
  });
});
