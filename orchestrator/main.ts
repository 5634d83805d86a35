// Entry point of the orchestrator program.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../shared/logger.ts';
import { closeOnSignals, listenOrExit } from '../shared/http-server.ts';
import { runMain } from '../shared/multicall.ts';
import { VERSION } from '../shared/version.ts';
import { parseOrchestratorFlags } from './flags.ts';
import { buildOrchestrator } from './orchestrator.ts';
import { DataDirLockedError, lockDataDir } from './storage/lock.ts';
import { IsolationUnavailable } from './isolation/index.ts';

/** How long a stop may take beyond the tasks' grace period: the SIGKILL round (at most 10 s) and writing the state. */
const STOP_MARGIN_SECONDS = 20;

export async function main(argv: string[]): Promise<void> {
  const config = parseOrchestratorFlags(argv);
  const logger = createLogger({ name: 'orchestrator', logfile: config.log.file, level: config.log.level });
  let unlock: () => void;
  try {
    unlock = lockDataDir(config.dataDir);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(`orchestrator: error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  process.on('exit', () => unlock());
  const orch = await buildOrchestrator(config, { logger }).catch((err: unknown) => {
    // --isolation=netns on a machine that cannot do it: say what is missing (root, iproute2, nftables).
    if (err instanceof IsolationUnavailable) {
      process.stderr.write(`orchestrator: error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  });
  // The data-dir lock goes with the 'exit' handler above. A stop kills every task in parallel within
  // its grace period (at most --stop-grace-period) and a SIGKILL round (bounded: tasks/cgroups.ts):
  // it is cut short (exit 1, tasks may be left) only when that bound is long past.
  closeOnSignals(orch.app, logger, () => orch.close(), (config.tasks.stopGracePeriodSeconds + STOP_MARGIN_SECONDS) * 1000);
  // The state is loaded before the port opens; leftovers of a crashed run are stopped while reads
  // are already served (writes wait for it: api/recovery-gate.ts).
  const recovering = orch.start();
  const url = await listenOrExit(orch.app, 'orchestrator', config.http.address, config.http.port, () => orch.close());
  const addr = orch.app.server.address();
  if (addr && typeof addr === 'object') orch.setHttpPort(addr.port);
  await recovering;
  logger.info({ version: VERSION, url, dataDir: config.dataDir, hostname: config.hostname }, 'orchestrator listening');
}

/**
 * What main does before it answers, twice on one fresh data dir (a first start, then a restart
 * that loads what the first wrote), without a port: the build runs it to make the executable's
 * code cache (scripts/lib/warm-code-cache.ts). Its files go with it.
 */
export async function warmUp(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'starmap-orchestrator-warm-up-'));
  try {
    for (let run = 0; run < 2; run++) {
      const config = parseOrchestratorFlags([`--data-dir=${dataDir}`]);
      const logger = createLogger({ name: 'orchestrator', destination: { write: () => undefined } });
      const orch = await buildOrchestrator(config, { logger });
      await orch.start();
      await orch.app.ready();
      await orch.app.inject({ method: 'GET', url: '/ping' });
      await orch.app.inject({ method: 'GET', url: '/v2/apps' });
      await orch.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void runMain('orchestrator', main, undefined, warmUp);
