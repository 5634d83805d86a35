// The V8 flags of each executable, declared once: scripts/build.ts bakes them in, and
// bench/checks.bench.ts runs the probe's code from source under the probe's.

/**
 * Node/V8 options baked into an executable, chosen per program from bench/checks.bench.ts,
 * bench/startup.bench.ts and bench/orchestrator-launch-memory.bench.ts (figures in bench/RESULTS.md).
 *
 * A V8 flag that enters V8's flag hash (most do: --optimize-for-size, --bytecode-old-age, --max-lazy;
 * not heap sizes, --v8-pool-size or --no-concurrent-recompilation) makes V8 reject the code cache
 * that Node embeds for its own built-in modules, so every one of them (http, net, stream, …) is
 * compiled again at each start: +10 ms to a probe's start, +29 ms to the orchestrator's restart
 * (121 → 92 ms). So no program has one:
 * - --optimize-for-size traded CPU for heap: a TCP check cost 2.4× the CPU of a bare net.connect
 *   (1.2× without), a collector fetch of a 1 MiB document 1.9× the CPU; the orchestrator held
 *   84 MiB at 1,000 apps with it, 98 MiB without (goal: 120 MiB).
 * - --bytecode-old-age=1 (drop the bytecode of what has not run since the last full GC, such as
 *   the code that only ran at start) saved an idle probe ~1.3 MiB.
 * The orchestrator runs with --no-concurrent-recompilation, which keeps Node's cache: V8's
 * optimising compiler then works on the main thread, and the memory its background threads kept
 * between runs (the spread of the orchestrator's RSS at 1,000 apps: 113-125 MiB without the flag,
 * 98 MiB with it) is not taken, with launches and POSTs as fast.
 * Setting a flag at run time with v8.setFlagsFromString instead made process.exit hang now and then.
 */
export const EXEC_ARGV: Record<string, string[]> = {
  orchestrator: ['--no-concurrent-recompilation'],
};
