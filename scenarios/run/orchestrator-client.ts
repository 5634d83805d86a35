// The scenario runner's client for a Marathon-compatible orchestrator: ours, or a real Marathon
// (DC/OS) given with --orchestrator. Uses only Marathon's REST API and event stream, plus
// Starmap's policy extension endpoint when the orchestrator has one.
import { Agent, request, type Dispatcher } from 'undici';

export class OrchestratorError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface Task {
  id: string;
  appId: string;
  host: string;
  ports: number[];
  state?: string;
  ipAddresses?: { ipAddress: string; protocol: string }[];
  healthCheckResults?: { alive: boolean }[];
}

export interface MarathonEvent {
  eventType: string;
  [k: string]: unknown;
}

export class OrchestratorClient {
  readonly base: string;
  #token: string | undefined;
  readonly #dispatcher: Dispatcher = new Agent({ connect: { timeout: 5000 }, headersTimeout: 30_000, bodyTimeout: 30_000 });

  constructor(base: string, token?: string) {
    this.base = base.replace(/\/+$/, '');
    this.#token = token;
  }

  /** Logs in with a local account (DC/OS style) and keeps the token for later calls. */
  async login(uid: string, password: string): Promise<void> {
    const res = await this.call('POST', '/acs/api/v1/auth/login', { uid, password }, false);
    this.#token = (res as { token: string }).token;
  }

  setToken(token: string): void {
    this.#token = token;
  }

  #headers(json: boolean): Record<string, string> {
    return {
      accept: 'application/json',
      ...(json ? { 'content-type': 'application/json' } : {}),
      ...(this.#token ? { authorization: `token=${this.#token}` } : {}),
    };
  }

  async call(method: Dispatcher.HttpMethod, path: string, body?: unknown, auth = true): Promise<unknown> {
    const headers = this.#headers(body !== undefined);
    if (!auth) delete headers.authorization;
    const res = await request(`${this.base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: this.#dispatcher,
    });
    const text = await res.body.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    if (res.statusCode >= 400) {
      const message = (json as { message?: string } | undefined)?.message ?? text.slice(0, 200);
      throw new OrchestratorError(res.statusCode, `${method} ${path}: HTTP ${res.statusCode}: ${message}`);
    }
    return json;
  }

  /** Creates or replaces a group (PUT /v2/groups, forced over a running deployment); returns the deployment id. */
  async putGroup(group: { id: string } & Record<string, unknown>): Promise<string> {
    const res = (await this.call('PUT', `/v2/groups${group.id}?force=true`, group)) as { deploymentId: string };
    return res.deploymentId;
  }

  /** Removes a group and everything in it. */
  async deleteGroup(id: string): Promise<string | undefined> {
    const res = (await this.call('DELETE', `/v2/groups${id}?force=true`)) as { deploymentId?: string };
    return res.deploymentId;
  }

  async deployments(): Promise<{ id: string }[]> {
    return (await this.call('GET', '/v2/deployments')) as { id: string }[];
  }

  async tasks(appId: string): Promise<Task[]> {
    return ((await this.call('GET', `/v2/apps${appId}/tasks`)) as { tasks: Task[] }).tasks;
  }

  /**
   * Opens the event stream and calls `onEvent` for each event until `stop()` is called. The
   * returned promise resolves once the stream is attached (event_stream_attached or first bytes).
   */
  async events(types: string[], onEvent: (e: MarathonEvent) => void): Promise<{ stop: () => void }> {
    const ac = new AbortController();
    const qs = types.map((t) => `event_type=${encodeURIComponent(t)}`).join('&');
    const res = await request(`${this.base}/v2/events${qs ? `?${qs}` : ''}`, {
      headers: { ...this.#headers(false), accept: 'text/event-stream' },
      signal: ac.signal,
      dispatcher: this.#dispatcher,
      bodyTimeout: 0,
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new OrchestratorError(res.statusCode, `GET /v2/events: HTTP ${res.statusCode}`);
    }
    let buffer = '';
    res.body.setEncoding('utf8');
    res.body.on('data', (chunk: string) => {
      buffer += chunk;
      let idx: number;
      while ((idx = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const frame = buffer.slice(0, idx);
        buffer = buffer.slice(idx).replace(/^\r?\n\r?\n/, '');
        const data = frame
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (!data) continue;
        try {
          onEvent(JSON.parse(data) as MarathonEvent);
        } catch {
          /* a malformed frame is skipped */
        }
      }
    });
    res.body.on('error', () => {});
    return { stop: () => ac.abort() };
  }

  /**
   * Waits until a deployment is gone from /v2/deployments (finished or cancelled), or until
   * `done()` says the caller learnt the outcome otherwise (the event stream). Throws 'interrupted'
   * once `signal` aborts.
   */
  async waitDeployment(id: string, deadlineMs: number, opts: { done?: () => boolean; signal?: AbortSignal } = {}): Promise<void> {
    const end = Date.now() + deadlineMs;
    while (Date.now() < end) {
      if (opts.done?.()) return;
      if (opts.signal?.aborted) throw new Error('interrupted');
      const list = await this.deployments();
      if (!list.some((d) => d.id === id)) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (opts.done?.()) return;
    throw new Error(`deployment ${id} did not finish within ${Math.round(deadlineMs / 1000)} s`);
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}
