// The Dockerfile passes dockerfile-utils lint (no problems at all) and keeps the properties the
// distribution promises: multi-stage from Node 24, a final stage FROM scratch, non-root user,
// HEALTHCHECK in exec form, OCI labels, both agent ports.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate } from 'dockerfile-utils';
import { ROOT } from './helpers/process.ts';

const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

describe('Dockerfile', () => {
  it('has no lint problems (dockerfile-utils)', () => {
    const problems = validate(text);
    expect(problems.map((p) => `line ${p.range.start.line + 1}: ${p.message}`)).toEqual([]);
  });

  it('builds with Node 24 and ships a locked-down scratch image', () => {
    const froms = [...text.matchAll(/^FROM\s+(.+)$/gm)].map((m) => m[1]!);
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/^ARG NODE_IMAGE=node:24-bookworm$/m);
    expect(froms.at(-1)).toBe('scratch');
    const final = text.slice(text.lastIndexOf('FROM scratch'));
    expect(final).toMatch(/^USER 65532:65532$/m);
    expect(final).toMatch(/^EXPOSE 9000 9001$/m);
    expect(final).toMatch(/^HEALTHCHECK .* CMD \["\/usr\/local\/bin\/healthcheck"\]$/m);
    for (const label of ['version', 'source', 'licenses', 'title', 'description']) expect(final).toContain(`org.opencontainers.image.${label}=`);
    expect(final).not.toMatch(/^RUN /m);
  });
});
