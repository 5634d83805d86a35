// DC/OS serves Marathon behind its admin router at /marathon/ (and /service/marathon/), and clients
// set up for DC/OS call /marathon/v2/... (go-marathon with its DC/OS token, the DC/OS CLI). The
// orchestrator serves the same API there, as the admin router does: the prefix is taken off the
// URL before routing (fastify's rewriteUrl), so everything under it, auth and errors included, is
// the unprefixed path's; a relative Location in the answer gets the prefix back (as the admin
// router's proxy does), so that a client following it stays under the prefix.
import type { IncomingMessage } from 'node:http';

const PREFIXES = ['/marathon', '/service/marathon'] as const;

/** The admin router prefix `url` starts with ("/marathon" of "/marathon/v2/apps"), or ''. */
export function adminRouterPrefix(url: string): string {
  for (const prefix of PREFIXES) {
    if (url.startsWith(prefix)) {
      const next = url.charAt(prefix.length);
      if (next === '' || next === '/' || next === '?') return prefix;
    }
  }
  return '';
}

/** fastify's rewriteUrl: /marathon/v2/apps is /v2/apps, /marathon and /marathon/ are /. */
export function withoutAdminRouterPrefix(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const prefix = adminRouterPrefix(url);
  if (prefix === '') return url;
  const rest = url.slice(prefix.length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}
