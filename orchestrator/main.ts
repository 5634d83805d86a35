// Entry point of the orchestrator program.
import { createLogger } from '../shared/logger.ts';
import { closeOnSignals, listenOrExit } from '../shared/server.ts';
import { VERSION } from '../shared/version.ts';
import { parseOrchestratorFlags } from './flags.ts';
import { buildOrchestrator } from './server.ts';
import { DataDirLockedError, lockDataDir } from './state/lock.ts';
import { IsolationUnavailable } from './isolation/index.ts';

export async function main(argv: string[]): Promise<void> {
  const flags = parseOrchestratorFlags(argv);
  const logger = createLogger({ name: 'orchestrator', logfile: flags.logfile, level: flags.logLevel });
  let unlock: () => void;
  try {
    unlock = lockDataDir(flags.dataDir);
  } catch (err) {
    if (err instanceof DataDirLockedError) {
      process.stderr.write(`orchestrator: error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  process.on('exit', () => unlock());
  const orch = await buildOrchestrator({
    logger,
    dataDir: flags.dataDir,
    hostname: flags.hostname,
    httpPort: flags.httpPort,
    localPortMin: flags.localPortMin,
    localPortMax: flags.localPortMax,
    taskPortMin: flags.taskPortMin,
    taskPortMax: flags.taskPortMax,
    eventSubscriber: flags.eventSubscriber,
    httpEndpoints: flags.httpEndpoints,
    defaultNetworkName: flags.defaultNetworkName,
    defaultAcceptedResourceRoles: flags.defaultAcceptedResourceRoles,
    mesosRole: flags.mesosRole,
    envVarsPrefix: flags.envVarsPrefix,
    features: flags.enableFeatures,
    auth: flags.auth === 'on',
    adminPassword: flags.adminPassword,
    tokenLifetimeSeconds: flags.tokenLifetime,
    isolation: flags.isolation === 'netns' ? { prefix: flags.netnsPrefix, subnet: flags.netnsSubnet, publishAddress: flags.publishAddress } : undefined,
  }).catch((err: unknown) => {
    // --isolation=netns on a machine that cannot do it: say what is missing (root, iproute2, nftables).
    if (err instanceof IsolationUnavailable) {
      process.stderr.write(`orchestrator: error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  });
  closeOnSignals(orch.app, logger, () => orch.close()); // the data-dir lock goes with the 'exit' handler above
  // The state is loaded before the port opens; leftovers of a crashed run are stopped while reads
  // are already served (writes wait for it: api/recovery-gate.ts).
  const recovering = orch.start();
  const url = await listenOrExit(orch.app, 'orchestrator', flags.httpAddress, flags.httpPort, () => orch.close());
  const addr = orch.app.server.address();
  if (addr && typeof addr === 'object') orch.setHttpPort(addr.port);
  await recovering;
  logger.info({ version: VERSION, url, dataDir: flags.dataDir, hostname: flags.hostname }, 'orchestrator listening');
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`orchestrator: fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
