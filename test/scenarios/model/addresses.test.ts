// Planned addresses (scenarios/model/addresses.ts): what `scenario run` warns about when a pod did
// not get the address `scenario check` assumed.
import { describe, expect, it } from 'vitest';
import { addressMismatches, plannedAddresses } from '../../../scenarios/model/addresses.ts';

describe('addressMismatches', () => {
  const pods = [{ id: 'shop/web' }, { id: 'shop/api' }, { id: 'external:internet', external: '192.0.2.1' }];
  const planned = plannedAddresses(pods, '10.214.9.0/24');

  it('names a pod that got another address than planned', () => {
    const got = new Map([
      ['shop/web', '10.214.9.2'],
      ['shop/api', '10.214.9.9'],
    ]);
    expect(addressMismatches(planned, got, pods)).toEqual(['shop/api got 10.214.9.9, not 10.214.9.3']);
  });

  it('leaves externals out: the pods know them by their external address, which is not a move', () => {
    const got = new Map([
      ['shop/web', '10.214.9.2'],
      ['shop/api', '10.214.9.3'],
      ['external:internet', '192.0.2.1'],
    ]);
    expect(addressMismatches(planned, got, pods)).toEqual([]);
  });
});
