// Readiness checks (Marathon's ReadinessCheckExecutor): once a new task runs, GET its readiness
// URL every intervalSeconds until an answer's status is in httpStatusCodesForReady; then the task
// counts as ready and checking stops. Deployments count a new task only when it is healthy AND
// ready. Every result is kept (with the last response when preserveLastResponse) for
// /v2/deployments' currentActions and the app's readiness embed.
import { getOnce } from '../../shared/get-once.ts';
import { taskUrl } from './checks.ts';
import type { ReadinessCheck } from '../state/app-definition.ts';

export interface ReadinessResult {
  name: string;
  taskId: string;
  ready: boolean;
  lastResponse?: { status: number; contentType: string; body: string };
}

export interface ReadinessTarget {
  taskId: string;
  /** Address the task answers on (127.0.0.1, or an isolated task's own address). */
  host: string;
  port: number;
  check: ReadinessCheck;
}

/** Bodies kept for lastResponse are cut here: a task must not fill the orchestrator's memory. */
const MAX_BODY_BYTES = 64 * 1024;

export class ReadinessChecker {
  readonly results = new Map<string, ReadinessResult>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #onChange: (taskId: string) => void;

  constructor(onChange: (taskId: string) => void) {
    this.#onChange = onChange;
  }

  add(t: ReadinessTarget): void {
    if (this.#timers.has(t.taskId) || this.results.get(t.taskId)?.ready) return;
    this.results.set(t.taskId, { name: t.check.name, taskId: t.taskId, ready: false });
    const run = async () => {
      const r = await probe(t);
      if (!this.#timers.has(t.taskId)) return; // removed meanwhile
      this.results.set(t.taskId, r);
      this.#onChange(t.taskId);
      if (r.ready) this.#stop(t.taskId);
      else this.#timers.set(t.taskId, setTimeout(() => void run(), t.check.intervalSeconds * 1000).unref());
    };
    this.#timers.set(t.taskId, setTimeout(() => void run(), 0).unref());
  }

  remove(taskId: string): void {
    this.#stop(taskId);
    this.results.delete(taskId);
  }

  close(): void {
    for (const id of [...this.#timers.keys()]) this.#stop(id);
  }

  #stop(taskId: string): void {
    clearTimeout(this.#timers.get(taskId));
    this.#timers.delete(taskId);
  }
}

async function probe(t: ReadinessTarget): Promise<ReadinessResult> {
  const c = t.check;
  const url = new URL(taskUrl(c.protocol === 'HTTPS', t.host, t.port, c.path));
  try {
    // Like health checks: no certificate verification.
    const { status, contentType, body } = await getOnce(url, { timeoutMs: Math.max(1, c.timeoutSeconds * 1000), verifyTls: false }, async (res) => {
      let text = '';
      if (c.preserveLastResponse) {
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_BODY_BYTES) break;
        }
        text = Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8');
      }
      res.body.on('error', () => {});
      res.body.destroy();
      return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: text };
    });
    const ready = c.httpStatusCodesForReady.includes(status);
    return { name: c.name, taskId: t.taskId, ready, ...(c.preserveLastResponse ? { lastResponse: { status, contentType, body } } : {}) };
  } catch {
    return { name: c.name, taskId: t.taskId, ready: false };
  }
}
