// `npm run fuzz -- [--seed=N] [--duration=SECONDS] [--requests=N] [--concurrency=N] [--service=orchestrator,collector,probe]`:
// the fuzz of test/fuzz.test.ts for longer. Starts the three services on loopback (from source),
// sends hostile requests until the duration or the request count is reached, prints the counts
// and every failure (with the seed and the request index to draw it again), exits 1 on a failure.
import yargs from 'yargs';
import { stopAll } from '../helpers/process.ts';
import type { Service } from './catalogue.ts';
import { runFuzz } from './runner.ts';

const argv = yargs(process.argv.slice(2))
  .scriptName('fuzz')
  .option('seed', { type: 'number', describe: 'seed of the request stream (default: random, printed)' })
  .option('duration', { type: 'number', default: 300, describe: 'seconds to run' })
  .option('requests', { type: 'number', describe: 'requests per service (default: until the duration ends)' })
  .option('concurrency', { type: 'number', default: 4, describe: 'requests in flight per service' })
  .option('service', { type: 'string', default: 'orchestrator,collector,probe', describe: 'services to fuzz, comma-separated' })
  .strict()
  .parseSync();

const services = argv.service.split(',').map((s) => s.trim()) as Service[];
for (const s of services) {
  if (!['orchestrator', 'collector', 'probe'].includes(s)) {
    process.stderr.write(`fuzz: error: --service: unknown service "${s}" (orchestrator, collector, probe)\n`);
    process.exit(2);
  }
}
// The services run detached (their own process groups): Ctrl-C or a timeout must stop them too.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void stopAll().finally(() => process.exit(130)));
}
const seed = argv.seed ?? Math.floor(Math.random() * 2 ** 31);
process.stdout.write(`fuzz: seed ${seed}, ${argv.duration} s, services ${services.join(', ')}\n`);
const report = await runFuzz({
  seed,
  durationMs: argv.duration * 1000,
  concurrency: argv.concurrency,
  services,
  ...(argv.requests ? { requests: argv.requests } : {}),
});
await stopAll();
for (const s of services) process.stdout.write(`${s}: ${report.sent[s] ?? 0} requests, statuses ${JSON.stringify(report.statuses[s] ?? {})}\n`);
for (const f of report.failures) process.stdout.write(`FAIL ${JSON.stringify(f)}\n`);
process.stdout.write(`fuzz: seed ${seed}: ${report.failures.length} failures\n`);
process.exit(report.failures.length ? 1 : 0);
