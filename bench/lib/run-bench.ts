// How a benchmark script runs its main: a failure is printed, the processes it started are
// stopped (they would outlive it and disturb the next benchmark), and it exits 1.
import { stopAll } from '../../test/helpers/process.ts';

export function runBench(main: () => Promise<unknown>): void {
  main().catch(async (err: unknown) => {
    console.error(err);
    await stopAll();
    process.exit(1);
  });
}
