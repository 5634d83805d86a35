// GET / for a browser: the address the demo prints looks like a web login, and a browser got a raw
// 401 there. A request that accepts text/html gets a small page saying what this is, how to log in
// with curl and where the UI is; it is in the open context (contexts.ts) and so shows nothing a
// token guards: no state, no version, no path, no password. What it shows of the request (the
// Host, for the examples) is escaped. Every other client gets what it got before: 401 with auth
// on (the route's own hook requires the token of any request that does not accept HTML), else
// Marathon's 404 for a path no route serves.
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { parseHost } from '../../shared/web-guard.ts';
import { uriNotFound } from './errors.ts';

/** True when the Accept header lists text/html (with a q above 0): a browser navigating here. */
export function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return accept.split(',').some((part) => {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'text/html') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** The base URL for the examples: the Host the browser used when it is a host[:port], else a placeholder. */
function baseUrl(req: FastifyRequest): string {
  const host = req.headers.host;
  return `${req.protocol}://${host !== undefined && parseHost(host) ? host : '<orchestrator address>'}`;
}

export function homePage(base: string, authEnabled: boolean): string {
  const b = escapeHtml(base);
  const token = authEnabled ? ' -H "Authorization: token=$TOKEN"' : '';
  const login = authEnabled
    ? `<h2>Log in</h2>
<p>Every endpoint needs a token (DC/OS style). Get one with the password of the account <code>admin</code>: the one given with
<code>--admin-password</code> or <code>$STARMAP_ADMIN_PASSWORD</code>, else the one in the file <code>admin-password</code> of the
orchestrator's data directory (<code>npm start</code> prints it next to this address).</p>
<pre>PASSWORD='…'
TOKEN=$(jq -n --arg p "$PASSWORD" '{uid: "admin", password: $p}' | curl -s -H 'content-type: application/json' -d @- \\
  ${b}/acs/api/v1/auth/login | jq -r .token)
curl${token} ${b}/v2/apps</pre>`
    : `<h2>No login</h2>
<p>Authentication is off (<code>--auth=off</code>): every endpoint is open to whoever reaches it. For local experiments only.</p>
<pre>curl ${b}/v2/apps</pre>`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Starmap orchestrator</title>
<style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}pre{background:#f4f4f4;padding:.75rem;overflow-x:auto}</style>
</head><body>
<h1>Starmap orchestrator</h1>
<p>This is an API, not a web site: a Marathon-compatible orchestrator for one machine. It speaks Marathon's REST API
(<code>/v2/apps</code>, <code>/v2/groups</code>, <code>/v2/tasks</code>, <code>/v2/deployments</code>, <code>/v2/events</code>, …, also under
<code>/marathon/</code> as behind DC/OS's admin router) to API clients: curl, the scenario runner, go-marathon, the DC/OS CLI.
It has no web UI of its own.</p>
${login}
<h2>The UI</h2>
<p>The map of who reaches whom is the web UI of the collector, which runs as a task of this orchestrator (the management UI of
the stars demo). <code>npm start</code> prints its address as <code>collector UI: http://…</code>; otherwise find the collector's task
and its ports:</p>
<pre>curl${token} ${b}/v2/tasks</pre>
</body></html>
`;
}

/** `authenticate`: the token hook with auth on (undefined with --auth=off). */
export function homePageRoute(app: FastifyInstance, opts: { authenticate: onRequestAsyncHookHandler | undefined }): void {
  const { authenticate } = opts;
  const onRequest: onRequestAsyncHookHandler[] = authenticate
    ? [
        async function tokenUnlessBrowser(req, reply) {
          if (!acceptsHtml(req.headers.accept)) return authenticate.call(this, req, reply);
        },
      ]
    : [];
  app.get('/', { onRequest }, async (req, reply) => {
    if (!acceptsHtml(req.headers.accept)) throw uriNotFound(req);
    return reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(homePage(baseUrl(req), authenticate !== undefined));
  });
}
