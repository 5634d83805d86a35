// The floor for the executables' start (bench/startup.bench.ts): a fastify server with one route and
// nothing else (no logger, flags, metrics or program), with the programs' schema controller (no
// fast-json-stringify, schemas compiled on first use: shared/http-server.ts), built into an
// executable the way scripts/build.ts builds the programs, warm code cache included.
// Usage: fastify-floor PORT
import Fastify, { type FastifyServerOptions } from 'fastify';
import { schemaController, withoutSocket } from '../../shared/http-server.ts';
import { runMain } from '../../shared/multicall.ts';

function app(fastify: Partial<FastifyServerOptions> = {}) {
  const server = Fastify({ schemaController, ...fastify } as FastifyServerOptions);
  server.get('/', async () => ({}));
  return server;
}

async function main(argv: string[]): Promise<void> {
  await app().listen({ host: '127.0.0.1', port: Number(argv[0]) });
}

async function warmUp(): Promise<void> {
  await app(withoutSocket()).ready();
}

void runMain('fastify-floor', main, undefined, warmUp);
