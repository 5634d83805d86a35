// The Dockerfile passes dockerfile-utils lint (no problems at all) and keeps the properties the
// distribution promises: multi-stage from Node 24, a final stage FROM scratch, non-root user,
// HEALTHCHECK in exec form, OCI labels, both agent ports, and one agent executable (one Node
// runtime) with probe and collector as links to it.
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

  it('ships one multi-call agent executable, with probe and collector as links to it', () => {
    const build = text.slice(0, text.indexOf('FROM ${NODE_IMAGE} AS libs'));
    // Only the agent is built and copied: a second single-file executable would be a second runtime.
    expect(build).toMatch(/scripts\/build\.ts agent --arch=\$arch;/);
    expect(build).not.toMatch(/scripts\/build\.ts[^;]*\b(probe|collector)\b/);
    expect(build).toContain('cp dist/bin/agent /out/usr/local/bin/agent');
    expect(build).toContain('cp dist/bin/agent-linux-arm64 /out/usr/local/bin/agent');
    for (const name of ['probe', 'collector']) expect(build).toContain(`ln -s agent /out/usr/local/bin/${name}`);
    // The programs are still started by name (PATH), so `docker run IMAGE probe …` keeps working.
    const final = text.slice(text.lastIndexOf('FROM scratch'));
    expect(final).toMatch(/^ENV PATH=\/usr\/local\/bin$/m);
    expect(final).toMatch(/^CMD \["probe", "--help"\]$/m);
  });
});
