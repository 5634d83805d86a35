// Entry point of the collector program.
import type { FastifyServerOptions } from 'fastify';
import { createLogger, type Logger } from '../shared/logger.ts';
import { NameResolver } from '../shared/resolver.ts';
import { isMultiCall, runMain } from '../shared/multicall.ts';
import { closeOnSignals, listenOrExit, withoutSocket } from '../shared/http-server.ts';
import { VERSION } from '../shared/version.ts';
import { createCollectorApp } from './app.ts';
import { assetSource } from './assets.ts';
import { Collector } from './collector.ts';
import { parseCollectorFlags } from './flags.ts';
import { HostAllowList } from '../shared/web-guard.ts';

export async function main(argv: string[]): Promise<void> {
  const flags = parseCollectorFlags(argv);
  const logger = createLogger({ name: 'collector', logfile: flags.logfile, level: flags.logLevel });
  const { collector, app } = await build(flags, logger);
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

/** The collector and its HTTP app, not yet started or listening. */
async function build(flags: ReturnType<typeof parseCollectorFlags>, logger: Logger, fastify?: Partial<FastifyServerOptions>) {
  const collector = new Collector({
    resources: flags.resourcesFile ?? [],
    intervalMs: flags.httpRequestSeconds * 1000,
    concurrency: flags.concurrency,
    fetch: {
      timeoutMs: flags.timeoutSeconds * 1000,
      maxBodyBytes: flags.maxBodyBytes,
      verifyTls: !flags.insecure,
      resolver: new NameResolver({ timeoutMs: flags.timeoutSeconds * 1000, servers: flags.dnsServers }),
    },
    logger,
  });
  const hosts = new HostAllowList({ listenAddress: flags.httpAddress, names: flags.allowedHosts ?? [] });
  const app = await createCollectorApp(collector, logger, { hosts, ...(fastify ? { fastify } : {}) });
  return { collector, app };
}

/** What main does before listening, without a socket or a timer: the build runs it to make the code cache. */
export async function warmUp(): Promise<void> {
  const flags = parseCollectorFlags(['--http-port=9001']);
  const { app } = await build(flags, createLogger({ name: 'collector', destination: { write: () => undefined } }), withoutSocket());
  await app.ready();
}

// Start on load, unless the multi-call agent loaded this module to call main itself.
if (!isMultiCall()) {
  void runMain('collector', main, undefined, warmUp);
}
