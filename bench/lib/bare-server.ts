// A baseline server for the serving benchmarks, run as its own process like the program it is
// compared with: bare fastify answering GET on any path with the bytes of a file, as one Buffer
// read once. Usage: node bench/lib/bare-server.ts FILE PORT. Prints "ready" when listening.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const [file, port] = process.argv.slice(2);
const bytes = readFileSync(file!);
const app = Fastify();
app.get('/*', async (_req, reply) => reply.type('application/json; charset=utf-8').send(bytes));
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.stdout.write('ready\n');
