// Runs the three services as real processes on loopback and sends each a stream of hostile
// requests (catalogue.ts), a few at a time. What counts as a failure: a 5xx (other than the 501
// `{"message":"network policies need --isolation=netns …"}` of the /v2/starmap paths of an
// orchestrator without --isolation=netns, their designed and documented answer: README, "Network
// isolation and policies"), no answer within `hangMs`, a connection dropped without an answer, or a
// service that exits or no longer answers its health endpoint at the end. Request i of a service is
// drawn from (seed, service, i) alone, so a failure can be drawn again with the same seed.
import { connect } from 'node:net';
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

/** A body this large is beyond every service's limit (the orchestrator's is 8 MiB, the others' 1 MiB). */
const OVERSIZED = 8 * 1024 * 1024;

/** The answer to one request: its status and, for a 501, its body (which must say why). */
export interface Answer {
  status: number;
  body?: string;
}

/** Whether an answer is a failure for this request. */
function isFailure(service: Service, req: FuzzRequest, answer: Answer): boolean {
  if (answer.status < 500) return false;
  // Also under DC/OS's prefixes, which the orchestrator serves the same API under.
  const designed = service === 'orchestrator' && answer.status === 501 && req.path.replace(/^(?:\/service)?\/marathon(?=[/?]|$)/, '').startsWith('/v2/starmap');
  // A HEAD answer has no body to say why.
  return !(designed && (req.method === 'HEAD' || /--isolation=netns/.test(String(messageOf(answer.body)))));
}

function messageOf(body: string | undefined): unknown {
  try {
    return (JSON.parse(body ?? '') as { message?: unknown }).message;
  } catch {
    return undefined;
  }
}

async function startServices(opts: FuzzOptions): Promise<{ targets: Target[]; ctx: DrawContext }> {
  const services = opts.services ?? ['orchestrator', 'collector', 'probe'];
  const closed = await freePort(); // nothing listens there: the place every non-loopback URL is sent to
  const ctx: DrawContext = { fallbackUrl: `http://127.0.0.1:${closed}/`, probeUrl: `http://127.0.0.1:${closed}/status` };
  const targets: Target[] = [];
  if (services.includes('orchestrator')) {
    const [min, max] = opts.taskPorts ?? [40600, 40639];
    const o = await startOrchestrator([
      '--event_subscriber=http_callback',
      '--enable_features=task_killing',
      '--local-port-min=13300',
      '--local-port-max=13400',
      `--task-port-min=${min}`,
      `--task-port-max=${max}`,
    ]);
    ctx.token = o.authHeaders.authorization;
    targets.push({ service: 'orchestrator', url: o.url, proc: o.proc, health: '/ping' });
  }
  if (services.includes('probe')) {
    const p = await startProbe([
      `--urls=${ctx.fallbackUrl},http://127.0.0.1:${closed}/x`,
      '--http-probe-seconds=0.5',
      '--timeout-seconds=0.3',
      '--log-level=warn',
    ]);
    ctx.probeUrl = `${p.url}/status`;
    targets.push({ service: 'probe', url: p.url, proc: p.proc, health: '/healthz' });
  }
  if (services.includes('collector')) {
    const port = await freePort();
    const proc = start(NODE, [
      'collector/main.ts',
      '--http-address=127.0.0.1',
      `--http-port=${port}`,
      '--http-request-seconds=0.5',
      '--timeout-seconds=0.3',
      '--log-level=warn',
    ]);
    const url = `http://127.0.0.1:${port}`;
    await waitForHttp(`${url}/healthz`, 20_000);
    targets.push({ service: 'collector', url, proc, health: '/healthz' });
  }
  return { targets, ctx };
}

/** The outcome of an oversized body whose connection the service closed before reading the body. */
export const CLOSED_UNREAD = 'closed before the body was read';

/**
 * Sends a body beyond the limit over a plain socket. A service answers it from the headers (413
 * from fastify's bodyLimit, 415, or the route's answer when it reads no body) and then closes the
 * connection with the body unread, so the kernel resets it; undici reports the write that failed
 * (EPIPE, ECONNRESET) instead of the answer it was sent. This writes the body a piece at a time and
 * stops at the first byte of an answer, so the answer is what counts. When the reset still wins the
 * race (Node drops what it has not read yet on a write error) the outcome is CLOSED_UNREAD: the
 * service read the headers and chose to close, which is no failure of the service.
 */
export function sendOversized(url: string, req: FuzzRequest, hangMs: number): Promise<Answer | string> {
  const { hostname, port } = new URL(url);
  const body = Buffer.from(req.body ?? '');
  const headers = { ...req.headers, host: `${hostname}:${port}`, 'content-length': String(body.length), connection: 'close' };
  const head = Buffer.from(
    `${req.method} ${req.path} HTTP/1.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
    'latin1',
  );
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let error: NodeJS.ErrnoException | null = null;
    let hung = false;
    const socket = connect(Number(port), hostname);
    const timer = setTimeout(() => {
      hung = true;
      socket.destroy();
    }, hangMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', (e: NodeJS.ErrnoException) => (error ??= e));
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3}) /.exec(text);
      if (status) resolve({ status: Number(status[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
      else if (hung) resolve(`hang: no answer within ${hangMs} ms`);
      else if (error && (error.code === 'EPIPE' || error.code === 'ECONNRESET') && at < body.length) resolve(CLOSED_UNREAD);
      else resolve(`no answer: ${error ? `${error.code ?? ''} ${error.message}` : 'closed'}`);
    });
    let at = 0;
    const writeOn = (err?: Error | null): void => {
      if (err || chunks.length > 0 || socket.destroyed) return; // answered (or gone): the rest is not wanted
      if (at >= body.length) return void socket.end();
      const piece = body.subarray(at, at + 64 * 1024);
      at += piece.length;
      // Once the kernel took this piece, let an answer that came meanwhile be read before the next.
      socket.write(piece, (e) => setImmediate(writeOn, e));
    };
    socket.write(head, (e) => setImmediate(writeOn, e));
  });
}

export async function send(pool: Pool, url: string, req: FuzzRequest, hangMs: number): Promise<Answer | string> {
  if ((req.body?.length ?? 0) > OVERSIZED) return sendOversized(url, req, hangMs);
  try {
    const res = await pool.request({
      method: req.method,
      path: req.path,
      headers: req.headers,
      body: req.body ?? null,
      headersTimeout: hangMs,
      bodyTimeout: hangMs,
    });
    // An event stream stays open by design: its status is the answer.
    if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) res.body.destroy();
    else if (res.statusCode === 501) return { status: 501, body: await res.body.text() };
    else await res.body.dump({ limit: 64 * 1024 * 1024 });
    return { status: res.statusCode };
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
      const outcome = await send(pool, t.url, req, hangMs);
      if (outcome === 'unsendable') continue; // undici refused to put it on the wire (e.g. a control character in the path)
      if (outcome === CLOSED_UNREAD) {
        statuses[outcome] = (statuses[outcome] ?? 0) + 1;
        report.sent[t.service] = (report.sent[t.service] ?? 0) + 1;
        continue;
      }
      report.sent[t.service] = (report.sent[t.service] ?? 0) + 1;
      const key = typeof outcome === 'string' ? outcome.split(':')[0]! : String(outcome.status);
      statuses[key] = (statuses[key] ?? 0) + 1;
      if (typeof outcome === 'string' || isFailure(t.service, req, outcome)) {
        const what = typeof outcome === 'string' ? outcome : `${outcome.status} ${excerpt(outcome.body)}`;
        report.failures.push({ service: t.service, index, method: req.method, path: req.path, body: excerpt(req.body), outcome: what });
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
      const answer = alive
        ? await fetch(`${t.url}${t.health}`, { signal: AbortSignal.timeout(opts.hangMs ?? 20_000) }).then(
            (r) => r.status,
            (e: Error) => e.message,
          )
        : 'exited';
      if (answer !== 200)
        report.failures.push({
          service: t.service,
          index: -1,
          method: 'GET',
          path: t.health,
          body: '',
          outcome: `after the run: ${answer}; output: ${excerpt(t.proc.output().slice(-2000))}`,
        });
    }
  } finally {
    // SIGTERM: the orchestrator stops the tasks the fuzz made it start.
    await Promise.all(targets.map((t) => t.proc.stop('SIGTERM')));
  }
  return report;
}
