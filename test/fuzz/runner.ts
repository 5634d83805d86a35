// Runs the three services as real processes on loopback and sends each a stream of hostile
// requests (catalogue.ts), a few at a time. What counts as a failure: a 5xx (other than 501 from
// the policy paths of an orchestrator without --isolation=netns, which is their designed answer),
// no answer within `hangMs`, a connection dropped without an answer, or a service that exits or no
// longer answers its health endpoint at the end. Request i of a service is drawn from
// (seed, service, i) alone, so a failure can be drawn again with the same seed.
import { Pool } from 'undici';
import { NODE, freePort, start, waitForHttp, type Running } from '../helpers/process.ts';
import { startOrchestrator } from '../helpers/orchestrator.ts';
import { startProbe } from '../helpers/probe.ts';
import { drawRequest, type DrawContext, type FuzzRequest, type Service } from './catalogue.ts';
import { Draw, seedOf } from './values.ts';

export interface FuzzOptions {
  seed: number;
  /** Requests per service (the run stops at this count or at `durationMs`, whichever comes first). */
  requests?: number;
  durationMs?: number;
  /** Requests in flight per service. */
  concurrency?: number;
  /** A request without an answer after this long is a hang. */
  hangMs?: number;
  services?: Service[];
  /** Task ports the orchestrator may give (a narrow range also bounds how many tasks can run). */
  taskPorts?: [number, number];
}

export interface Failure {
  service: Service;
  index: number;
  method: string;
  path: string;
  body: string;
  outcome: string;
}

export interface FuzzReport {
  seed: number;
  sent: Record<string, number>;
  statuses: Record<string, Record<string, number>>;
  failures: Failure[];
}

interface Target {
  service: Service;
  url: string;
  proc: Running;
  health: string;
}

const excerpt = (s: string | undefined) => (s === undefined ? '' : s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);

/** Whether a status is a failure for this request. */
function isFailure(service: Service, req: FuzzRequest, status: number): boolean {
  if (status < 500) return false;
  return !(service === 'orchestrator' && status === 501 && req.path.startsWith('/v2/starmap'));
}

async function startServices(opts: FuzzOptions): Promise<{ targets: Target[]; ctx: DrawContext }> {
  const services = opts.services ?? ['orchestrator', 'collector', 'probe'];
  const closed = await freePort(); // nothing listens there: the place every non-loopback URL is sent to
  const ctx: DrawContext = { fallbackUrl: `http://127.0.0.1:${closed}/`, probeUrl: `http://127.0.0.1:${closed}/status` };
  const targets: Target[] = [];
  if (services.includes('orchestrator')) {
    const [min, max] = opts.taskPorts ?? [40600, 40639];
    const o = await startOrchestrator(['--event_subscriber=http_callback', '--enable_features=task_killing', '--local-port-min=13300', '--local-port-max=13400', `--task-port-min=${min}`, `--task-port-max=${max}`]);
    ctx.token = o.authHeaders.authorization;
    targets.push({ service: 'orchestrator', url: o.url, proc: o.proc, health: '/ping' });
  }
  if (services.includes('probe')) {
    const p = await startProbe([`--urls=${ctx.fallbackUrl},http://127.0.0.1:${closed}/x`, '--http-probe-seconds=0.5', '--timeout-seconds=0.3', '--log-level=warn']);
    ctx.probeUrl = `${p.url}/status`;
    targets.push({ service: 'probe', url: p.url, proc: p.proc, health: '/healthz' });
  }
  if (services.includes('collector')) {
    const port = await freePort();
    const proc = start(NODE, ['collector/main.ts', '--http-address=127.0.0.1', `--http-port=${port}`, '--http-request-seconds=0.5', '--timeout-seconds=0.3', '--log-level=warn']);
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/healthz`, 20_000);
    targets.push({ service: 'collector', url, proc, health: '/healthz' });
  }
  return { targets, ctx };
}

async function send(pool: Pool, req: FuzzRequest, hangMs: number): Promise<number | string> {
  try {
    const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body ?? null, headersTimeout: hangMs, bodyTimeout: hangMs });
    // An event stream stays open by design: its status is the answer.
    if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) res.body.destroy();
    else await res.body.dump({ limit: 64 * 1024 * 1024 });
    return res.statusCode;
  } catch (err) {
    const e = err as { code?: string; message: string };
    if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return `hang: no answer within ${hangMs} ms`;
    if (e.code === 'UND_ERR_INVALID_ARG') return 'unsendable';
    return `no answer: ${e.code ?? ''} ${e.message}`;
  }
}

async function fuzzOne(t: Target, ctx: DrawContext, opts: FuzzOptions, report: FuzzReport, deadline: number): Promise<void> {
  const pool = new Pool(t.url, { connections: opts.concurrency ?? 4, pipelining: 1 });
  const total = opts.requests ?? Infinity;
  const hangMs = opts.hangMs ?? 20_000;
  const statuses: Record<string, number> = (report.statuses[t.service] = {});
  let next = 0;
  const worker = async () => {
    while (next < total && Date.now() < deadline) {
      const index = next++;
      const req = drawRequest(new Draw(seedOf(opts.seed, t.service, index)), t.service, ctx);
      const outcome = await send(pool, req, hangMs);
      if (outcome === 'unsendable') continue; // undici refused to put it on the wire (e.g. a control character in the path)
      report.sent[t.service] = (report.sent[t.service] ?? 0) + 1;
      const key = typeof outcome === 'number' ? String(outcome) : outcome.split(':')[0]!;
      statuses[key] = (statuses[key] ?? 0) + 1;
      // A body beyond the size limit may be cut off mid-send: the 413 can come before the rest is written.
      const tooLarge = (req.body?.length ?? 0) > 8 * 1024 * 1024 && typeof outcome === 'string' && outcome.startsWith('no answer');
      if ((typeof outcome === 'number' && isFailure(t.service, req, outcome)) || (typeof outcome === 'string' && !tooLarge)) {
        report.failures.push({ service: t.service, index, method: req.method, path: req.path, body: excerpt(req.body), outcome: String(outcome) });
      }
      if (t.proc.child.exitCode !== null || t.proc.child.signalCode !== null) return;
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency ?? 4 }, worker));
  await pool.close();
}

/** Starts the services, fuzzes them all at once, checks each is still up, and stops them. */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { seed: opts.seed, sent: {}, statuses: {}, failures: [] };
  const { targets, ctx } = await startServices(opts);
  const deadline = Date.now() + (opts.durationMs ?? 24 * 3600_000);
  try {
    await Promise.all(targets.map((t) => fuzzOne(t, ctx, opts, report, deadline)));
    for (const t of targets) {
      const alive = t.proc.child.exitCode === null && t.proc.child.signalCode === null;
      const answer = alive ? await fetch(`${t.url}${t.health}`, { signal: AbortSignal.timeout(opts.hangMs ?? 20_000) }).then((r) => r.status, (e: Error) => e.message) : 'exited';
      if (answer !== 200) report.failures.push({ service: t.service, index: -1, method: 'GET', path: t.health, body: '', outcome: `after the run: ${answer}; output: ${excerpt(t.proc.output().slice(-2000))}` });
    }
  } finally {
    // SIGTERM: the orchestrator stops the tasks the fuzz made it start.
    await Promise.all(targets.map((t) => t.proc.stop('SIGTERM')));
  }
  return report;
}
