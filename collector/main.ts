// Entry point of the collector program.
import { createLogger } from '../shared/logger.ts';
import { NameResolver } from '../shared/resolver.ts';
import { isMultiCall, runMain } from '../shared/multicall.ts';
import { closeOnSignals, listenOrExit } from '../shared/http-server.ts';
import { VERSION } from '../shared/version.ts';
import { createCollectorApp } from './app.ts';
import { assetSource } from './assets.ts';
import { Collector } from './collector.ts';
import { parseCollectorFlags } from './flags.ts';

export async function main(argv: string[]): Promise<void> {
  const flags = parseCollectorFlags(argv);
  const logger = createLogger({ name: 'collector', logfile: flags.logfile, level: flags.logLevel });
  const collector = new Collector({
    resources: flags.resourcesFile ?? [],
    intervalMs: flags.httpRequestSeconds * 1000,
    concurrency: flags.concurrency,
    fetch: {
      timeoutMs: flags.timeoutSeconds * 1000,
      maxBodyBytes: flags.maxBodyBytes,
      verifyTls: !flags.insecure,
      resolver: new NameResolver({ timeoutMs: flags.timeoutSeconds * 1000, ...(flags.dnsServers ? { servers: flags.dnsServers } : {}) }),
    },
    logger,
  });
  const app = await createCollectorApp(collector, logger);
  closeOnSignals(app, logger, () => collector.stop());
  const url = await listenOrExit(app, 'collector', flags.httpAddress, flags.httpPort);
  collector.start();
  logger.info(
    {
      version: VERSION,
      url,
      resources: collector.store.size,
      intervalSeconds: flags.httpRequestSeconds,
      timeoutSeconds: flags.timeoutSeconds,
      ui: assetSource(),
    },
    'collector listening',
  );
}

// Start on load, unless the multi-call agent loaded this module to call main itself.
if (!isMultiCall()) {
  void runMain('collector', main);
}
