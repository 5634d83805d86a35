// Documents the collector benchmarks serve as if they came from probes.

/** A probe's /status with 10 targets (~1.6 KB), as the collector would fetch it from a probe; target urls name `services` services. */
export function statusDoc(i: number, services: number): string {
  const targets = Array.from({ length: 10 }, (_, j) => ({
    reachable: (i + j) % 3 !== 0,
    url: `http://svc-${(i + j) % services}.bench/status`,
    reason: (i + j) % 3 !== 0 ? 'ok' : 'timeout',
    message: null,
    latencyMs: 1.23,
    statusCode: 200,
    checkedAt: '2026-11-21T18:00:00.000Z',
    changedAt: '2026-11-21T17:00:00.000Z',
  }));
  return JSON.stringify({ status: { targets } });
}
