// Entry point of the probe program.
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { createLogger, type Logger } from '../shared/logger.ts';
import { NameResolver } from '../shared/resolver.ts';
import { isMultiCall, runMain } from '../shared/multicall.ts';
import { closeOnSignals, createServer, listenOrExit, withoutSocket } from '../shared/http-server.ts';
import { VERSION } from '../shared/version.ts';
import { parseProbeFlags } from './flags.ts';
import { Probe } from './probe.ts';
import { ServeError, startServing, type Serving } from './serve.ts';
import { probeRoutes } from './routes.ts';

export async function main(argv: string[]): Promise<void> {
  const flags = parseProbeFlags(argv);
  const logger = createLogger({ name: 'probe', logfile: flags.logfile, level: flags.logLevel });
  const { probe, app } = await build(flags, logger);
  let serving: Serving | undefined;
  closeOnSignals(app, logger, async () => {
    await probe.stop();
    await serving?.close();
  });
  const url = await listenOrExit(app, 'probe', flags.httpAddress, flags.httpPort);
  if (flags.serve) {
    try {
      serving = await startServing(flags.httpAddress, flags.serve, logger, { countDatagram: probe.metrics.countServedDatagram });
    } catch (err) {
      if (!(err instanceof ServeError)) throw err;
      process.stderr.write(`probe: error: ${err.message} (on --http-address=${flags.httpAddress})\n`);
      await app.close();
      process.exit(1);
    }
  }
  probe.start();
  logger.info(
    {
      version: VERSION,
      url,
      targets: flags.targets.length,
      serve: flags.serve?.map((s) => `${s.port}/${s.protocol}`),
      intervalSeconds: flags.httpProbeSeconds,
      timeoutSeconds: flags.timeoutSeconds,
    },
    'probe listening',
  );
}

/** The probe and its HTTP app, not yet started or listening. */
async function build(
  flags: ReturnType<typeof parseProbeFlags>,
  logger: Logger,
  fastify?: Partial<FastifyServerOptions>,
): Promise<{ probe: Probe; app: FastifyInstance }> {
  const probe = new Probe({
    targets: flags.targets,
    intervalMs: flags.httpProbeSeconds * 1000,
    concurrency: flags.concurrency,
    check: {
      timeoutMs: flags.timeoutSeconds * 1000,
      acceptStatus: flags.expectStatus,
      verifyTls: !flags.insecure,
      resolver: new NameResolver({ timeoutMs: flags.timeoutSeconds * 1000, servers: flags.dnsServers }),
    },
    logger,
  });
  const app = createServer({ logger, ...(fastify ? { fastify } : {}) });
  await app.register(probeRoutes, { state: probe.state, metrics: probe.metrics, health: () => probe.health(), poke: () => probe.poke() });
  return { probe, app };
}

/** What main does before listening, without a socket or a timer: the build runs it to make the code cache. */
export async function warmUp(): Promise<void> {
  const flags = parseProbeFlags(['--urls=127.0.0.1:9000,http://localhost:9001/x', '--http-port=9000']);
  const { app } = await build(flags, createLogger({ name: 'probe', destination: { write: () => undefined } }), withoutSocket());
  await app.ready();
}

// Start on load, unless the multi-call agent loaded this module to call main itself.
if (!isMultiCall()) {
  void runMain('probe', main, undefined, warmUp);
}
