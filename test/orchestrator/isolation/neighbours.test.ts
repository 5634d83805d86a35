// The neighbour-table limits (orchestrator/isolation/neighbours.ts): what a subnet needs, and that
// they are only ever raised, on sysctl files in a temporary directory (the machine's own are
// checked by netns.test.ts after a real start).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureNeighbourRoom, NEIGHBOUR_CAP, neededLimits } from '../../../orchestrator/isolation/neighbours.ts';

function sysctlDir(thresh2: number, thresh3: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'starmap-neigh-'));
  writeFileSync(join(dir, 'gc_thresh2'), `${thresh2}\n`);
  writeFileSync(join(dir, 'gc_thresh3'), `${thresh3}\n`);
  return dir;
}

describe('neighbour table limits', () => {
  it('room for every task talking to every other, capped, never below the current limits', () => {
    expect(neededLimits(251, { gcThresh2: 512, gcThresh3: 1024 })).toEqual({ gcThresh2: 31501, gcThresh3: 63001 });
    expect(neededLimits(1019, { gcThresh2: 512, gcThresh3: 1024 })).toEqual({ gcThresh2: NEIGHBOUR_CAP / 2, gcThresh3: NEIGHBOUR_CAP });
    expect(neededLimits(5, { gcThresh2: 512, gcThresh3: 1024 })).toEqual({ gcThresh2: 512, gcThresh3: 1024 });
    expect(neededLimits(251, { gcThresh2: 100_000, gcThresh3: 200_000 })).toEqual({ gcThresh2: 100_000, gcThresh3: 200_000 });
  });

  it('raises the limits and says so; leaves enough alone; says when it cannot write', () => {
    const dir = sysctlDir(512, 1024);
    expect(ensureNeighbourRoom(251, dir)).toBe(
      'isolation: raised net.ipv4.neigh.default.gc_thresh2/3 from 512/1024 to 31501/63001 (one table for every namespace; 251 task addresses)',
    );
    expect(readFileSync(join(dir, 'gc_thresh3'), 'utf8')).toBe('63001');
    expect(readFileSync(join(dir, 'gc_thresh2'), 'utf8')).toBe('31501');
    expect(ensureNeighbourRoom(251, dir)).toBeUndefined();
    expect(ensureNeighbourRoom(10, join(dir, 'missing'))).toBeUndefined();
  });
});
