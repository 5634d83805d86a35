// The short fuzz run of `npm test` (issue 16): the orchestrator, the collector and the probe as
// real processes on loopback, each sent hundreds of malformed and hostile requests (every
// endpoint, odd paths and queries, bodies almost right, wrong, not JSON, nested 10,000 deep or
// beyond the size limit): no 5xx, no hang, no crash. A fixed seed, so that CI runs the same
// requests every time (STARMAP_FUZZ_SEED and STARMAP_FUZZ_REQUESTS change it); a failure names the
// seed and the request. Longer runs with new seeds: `npm run fuzz -- --duration=600` (test/fuzz/main.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { stopAll } from './helpers/process.ts';
import { runFuzz, send } from './fuzz/runner.ts';

afterAll(async () => {
  await stopAll();
});

describe('fuzz', () => {
  it('counts the answer to a body beyond the limit, sent before the body is read, not the failed write', async () => {
    // As the services do (fastify's bodyLimit): 413 from the headers, then the connection closes.
    const server = createServer((req, res) =>
      res.writeHead(413, { 'content-type': 'application/json', connection: 'close' }).end('{"message":"Request body is too large"}'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pool = new Pool(url);
    try {
      for (let i = 0; i < 3; i++) {
        const answer = await send(
          pool,
          url,
          { method: 'POST', path: '/v2/groups', headers: { 'content-type': 'application/json' }, body: '{}'.padEnd(9 * 1024 * 1024, ' ') },
          20_000,
        );
        expect(answer).toMatchObject({ status: 413 });
      }
    } finally {
      await pool.close();
      server.close();
    }
  });

  it('no 5xx, no hang, no crash in the three services', async () => {
    const seed = Number(process.env.STARMAP_FUZZ_SEED ?? 1);
    const report = await runFuzz({ seed, requests: Number(process.env.STARMAP_FUZZ_REQUESTS ?? 2000), durationMs: 120_000 });
    console.log(`fuzz seed ${seed}: sent ${JSON.stringify(report.sent)}; statuses ${JSON.stringify(report.statuses)}`);
    expect(
      report.failures,
      `seed ${seed} (replay: STARMAP_FUZZ_SEED=${seed}); first failures:\n${JSON.stringify(report.failures.slice(0, 10), null, 1)}`,
    ).toEqual([]);
    for (const service of ['orchestrator', 'collector', 'probe']) expect(report.sent[service] ?? 0, service).toBeGreaterThan(0);
  }, 240_000);
});
