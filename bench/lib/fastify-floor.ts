// The floor for the executables' start (bench/startup.bench.ts): a fastify server with one route and
// nothing else (no logger, flags, metrics or program), with the programs' schema controller (no
// fast-json-stringify, schemas compiled on first use: shared/http-server.ts), built into an
// executable the way scripts/build.ts builds the programs, warm code cache included, listening the
// way they do.
// Given a route plan too (`GET:28,POST:18,…`, as many routes of each method as a program
// registers), it registers that many more, each a trivial handler with a params schema: what
// fastify alone costs a program with that many routes.
// Usage: fastify-floor PORT [PLAN]
import Fastify, { type FastifyServerOptions, type HTTPMethods } from 'fastify';
import { listen, schemaController, withoutSocket } from '../../shared/http-server.ts';
import { runMain } from '../../shared/multicall.ts';

const PARAMS = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

/** `GET:28,POST:18` → [['GET', 28], ['POST', 18]]. */
function parsePlan(plan: string): [HTTPMethods, number][] {
  return plan
    .split(',')
    .filter(Boolean)
    .map((part) => {
      const [method, n] = part.split(':');
      if (!method || !/^[A-Z]+$/.test(method) || !/^\d+$/.test(n ?? '')) throw new Error(`fastify-floor: not a route plan: ${plan}`);
      return [method as HTTPMethods, Number(n)];
    });
}

function app(plan: [HTTPMethods, number][], fastify: Partial<FastifyServerOptions> = {}) {
  const server = Fastify({ schemaController, ...fastify } as FastifyServerOptions);
  server.get('/', async () => ({}));
  for (const [method, n] of plan)
    for (let i = 0; i < n; i++) server.route({ method, url: `/r${i}/${method.toLowerCase()}/:id`, schema: { params: PARAMS }, handler: async () => ({}) });
  return server;
}

async function main(argv: string[]): Promise<void> {
  await listen(app(parsePlan(argv[1] ?? '')), '127.0.0.1', Number(argv[0]));
}

// A few routes of each method, so that the code cache holds what registering them runs.
async function warmUp(): Promise<void> {
  await app(parsePlan('GET:2,POST:2,PUT:2,DELETE:2,PATCH:2'), withoutSocket()).ready();
}

void runMain('fastify-floor', main, undefined, warmUp);
