// An orchestrator from source with --isolation=netns for a bench on packets, on a prefix and
// subnet of its own: what is left from an earlier run is removed first, and everything after.
import { cleanupAll, leftovers } from '../../orchestrator/isolation/index.ts';
import { isolationSkipReason } from '../../test/helpers/isolation.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../test/helpers/orchestrator.ts';
import { stopAll, tempDir } from '../../test/helpers/process.ts';

/** Starts it, or says why it cannot (no root, iproute2 or nftables) and gives undefined. */
export async function startIsolated(bench: string, prefix: string, subnet: string): Promise<StartedOrchestrator | undefined> {
  const missing = isolationSkipReason();
  if (missing) {
    console.log(`${bench}: skipped, ${missing} (needs root, iproute2 and nftables)`);
    return undefined;
  }
  await cleanupAll({ prefix, subnet });
  return startOrchestrator(['--auth=off', '--isolation=netns', `--netns-prefix=${prefix}`, `--netns-subnet=${subnet}`], { dataDir: tempDir('starmap-bench-') });
}

/** Stops it (SIGTERM: it removes its namespaces), then removes and reports what is left. */
export async function stopIsolated(bench: string, o: StartedOrchestrator, prefix: string, subnet: string): Promise<void> {
  await o.proc.stop('SIGTERM');
  await stopAll();
  await cleanupAll({ prefix, subnet });
  const left = await leftovers(prefix, subnet);
  const names = [...left.namespaces, ...left.links, ...left.tables, ...left.routes];
  if (names.length > 0) console.error(`${bench}: left behind: ${names.join(', ')}`);
}
