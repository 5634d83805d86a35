// What a browser and a client set up for DC/OS see (issue "Hardening and fidelity, round 2"),
// against real orchestrator processes on loopback: the page on / for a browser (open, escaped,
// nothing a token guards), the API answers to every other client unchanged, and the same API
// under /marathon/ as DC/OS's admin router serves it, called the way go-marathon with its DC/OS
// token option calls it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authHeader, loginWithPassword } from '../../../orchestrator/auth/client.ts';
import { acceptsHtml, homePage } from '../../../orchestrator/http/home-page.ts';
import { openSse } from '../../orchestrator-events-sse-client.ts';
import { removeTaskCgroups, startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { stopAll } from '../../helpers/process.ts';
import { sendRaw, type RawAnswer } from '../../helpers/raw-http.ts';

/** What Chromium sends when someone opens the address. */
const BROWSER = {
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8',
  'sec-fetch-site': 'none',
  'sec-fetch-mode': 'navigate',
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0',
};
const PASSWORD = 'web-front-admin-password';

let secured: StartedOrchestrator; // auth on, with the password above
let token: string;
let authHeaders: { authorization: string };
let openOne: StartedOrchestrator; // --auth=off
beforeAll(async () => {
  [secured, openOne] = await Promise.all([
    startOrchestrator(['--auth=on', `--admin-password=${PASSWORD}`, '--local-port-min=12900', '--local-port-max=12950']),
    startOrchestrator(['--auth=off', '--local-port-min=12950', '--local-port-max=13000']),
  ]);
  token = await loginWithPassword(secured.url, 'admin', PASSWORD);
  authHeaders = authHeader(token);
}, 40_000);
afterAll(async () => {
  await Promise.all([secured?.proc.stop('SIGTERM'), openOne?.proc.stop('SIGTERM')]);
  await stopAll();
  for (const o of [secured, openOne]) if (o) await removeTaskCgroups(o.dataDir);
});

describe('GET / for a browser', () => {
  it('is a page saying what this is, how to log in with curl and where the UI is, without a token', async () => {
    const app = { id: '/classified/app-name', cmd: 'sleep 1000', instances: 0, env: { API_KEY: 'env-secret-value' } };
    expect((await secured.call('POST', '/v2/apps', app, authHeaders)).status).toBe(201);
    const page = await sendRaw(secured.port, 'GET', '/', BROWSER);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.text).toContain('<h1>Starmap orchestrator</h1>');
    expect(page.text).toContain('Marathon');
    expect(page.text).toContain(`http://127.0.0.1:${secured.port}/acs/api/v1/auth/login`);
    expect(page.text).toContain('curl -H "Authorization: token=$TOKEN"');
    expect(page.text).toContain('collector UI: http://');
    // Nothing a token guards, nothing secret, no path of this machine.
    for (const secret of [PASSWORD, token, 'classified', 'env-secret-value', secured.dataDir]) expect(page.text).not.toContain(secret);
    // The same page under /marathon/, and for HEAD.
    expect((await sendRaw(secured.port, 'GET', '/marathon/', BROWSER)).text).toBe(page.text);
    const head = await sendRaw(secured.port, 'HEAD', '/', BROWSER);
    expect(head.status).toBe(200);
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('says so when auth is off, with examples without a token', async () => {
    const page = await sendRaw(openOne.port, 'GET', '/', BROWSER);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Authentication is off');
    expect(page.text).toContain(`curl http://127.0.0.1:${openOne.port}/v2/apps`);
    expect(page.text).not.toContain('Authorization');
  });

  it('escapes what it shows of the request', () => {
    const html = homePage('http://<script>alert(1)</script>"\'&', true);
    expect(html).not.toContain('<script>');
    expect(html).toContain('http://&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;/acs/api/v1/auth/login');
    // The Host it shows is the one the guard admitted, a host[:port]: any other gets 403 before the page.
    expect(acceptsHtml(BROWSER.accept)).toBe(true);
    for (const accept of [undefined, '*/*', 'application/json', 'text/plain', 'text/html;q=0', 'text/htmlx'])
      expect(acceptsHtml(accept), String(accept)).toBe(false);
  });

  it('leaves every other client with the answers it got before: 401 with auth on, 404 with it off', async () => {
    const missing = await sendRaw(secured.port, 'GET', '/nope');
    for (const headers of [{}, { accept: '*/*' }, { accept: 'application/json' }, { accept: 'text/plain' }] as Record<string, string>[]) {
      const r = await sendRaw(secured.port, 'GET', '/', headers);
      expect(r.status).toBe(401);
      expect(r.body).toEqual(missing.body);
      expect(r.headers['www-authenticate']).toBe('acsjwt');
    }
    const authed = await sendRaw(secured.port, 'GET', '/', { accept: 'application/json', ...authHeaders });
    expect(authed.status).toBe(404);
    expect(authed.body).toEqual({ message: 'URI not found: /' });
    const off = await sendRaw(openOne.port, 'GET', '/', { accept: 'application/json' });
    expect(off.status).toBe(404);
    expect(off.body).toEqual({ message: 'URI not found: /' });
    // A browser's POST to / is no page either.
    expect((await sendRaw(secured.port, 'POST', '/', BROWSER)).status).toBe(401);
  });
});

describe('the API under /marathon/, as behind DC/OS', () => {
  /** go-marathon with its DCOSToken option: base URL + "/marathon/" + "v2/…", these headers on every request. */
  const goMarathon = () => ({ 'content-type': 'application/json', accept: 'application/json', authorization: `token=${token}` });
  const same = (a: RawAnswer, b: RawAnswer) => {
    expect(a.status).toBe(b.status);
    expect(a.body).toEqual(b.body);
    expect(a.headers['www-authenticate']).toBe(b.headers['www-authenticate']);
  };

  it("serves go-marathon's calls: create, read, scale, restart, delete, with Location under the prefix", async () => {
    const create = await sendRaw(secured.port, 'POST', '/marathon/v2/apps', goMarathon(), JSON.stringify({ id: '/dcos/web', cmd: 'sleep 1000', instances: 0 }));
    expect(create.status).toBe(201);
    expect(create.headers.location).toBe('/marathon/v2/apps/dcos/web');
    expect(create.headers['marathon-deployment-id']).toEqual(expect.any(String));
    const app = await sendRaw(secured.port, 'GET', '/marathon/v2/apps/dcos/web', goMarathon());
    expect(app.status).toBe(200);
    expect(app.body.app.id).toBe('/dcos/web');
    expect((await sendRaw(secured.port, 'GET', '/marathon/ping', goMarathon())).text).toBe('"pong"');
    const scale = await sendRaw(secured.port, 'PUT', '/marathon/v2/apps/dcos/web?force=true', goMarathon(), '{"instances":0}');
    expect(scale.status).toBe(200);
    expect((await sendRaw(secured.port, 'POST', '/marathon/v2/apps/dcos/web/restart?force=true', goMarathon())).status).toBe(200);
    expect((await sendRaw(secured.port, 'GET', '/marathon/v2/deployments', goMarathon())).status).toBe(200);
    expect((await sendRaw(secured.port, 'GET', '/service/marathon/v2/apps/dcos/web', goMarathon())).body.app.id).toBe('/dcos/web');
    expect((await sendRaw(secured.port, 'DELETE', '/marathon/v2/apps/dcos/web?force=true', goMarathon())).status).toBe(200);
    expect((await sendRaw(secured.port, 'GET', '/v2/apps/dcos/web', goMarathon())).status).toBe(404);
  });

  it('answers exactly as the unprefixed path, auth and errors included', async () => {
    const { authorization: _token, ...noToken } = goMarathon();
    const cases: [string, string, Record<string, string>, string?][] = [
      ['GET', '/v2/apps', goMarathon()],
      ['GET', '/v2/apps', noToken],
      ['GET', '/v2/apps', { ...noToken, authorization: 'token=forged' }],
      ['GET', '/v2/nope', goMarathon()],
      ['GET', '/v2/apps/missing', goMarathon()],
      ['POST', '/v2/apps', goMarathon(), '{"id":"/bad id"}'],
      ['POST', '/v2/apps', goMarathon(), '{not json'],
      ['POST', '/v2/apps', { ...goMarathon(), 'content-type': 'text/plain' }, '{"id":"/x","cmd":"true"}'],
      ['POST', '/v2/apps', { ...goMarathon(), origin: 'http://evil.example' }, '{"id":"/x","cmd":"true"}'],
      ['GET', '/v2/apps', { ...goMarathon(), host: 'evil.example' }],
      ['GET', '/v2/info', goMarathon()],
      ['GET', '/v2/leader', goMarathon()],
      ['GET', '/v2/events', goMarathon()],
    ];
    for (const [method, path, headers, body] of cases) {
      const plain = await sendRaw(secured.port, method, path, headers, body);
      const prefixed = await sendRaw(secured.port, method, `/marathon${path}`, headers, body);
      same(prefixed, plain);
    }
    // /marathonx is not the prefix.
    const other = await sendRaw(secured.port, 'GET', '/marathonx/v2/apps', goMarathon());
    expect(other.status).toBe(404);
    expect(other.body).toEqual({ message: 'URI not found: /marathonx/v2/apps' });
  });

  it('streams events under the prefix, with the same auth', async () => {
    const denied = await sendRaw(secured.port, 'GET', '/marathon/v2/events', { accept: 'text/event-stream' });
    expect(denied.status).toBe(401);
    const stream = await openSse(secured.url, '/marathon/v2/events', authHeaders);
    try {
      expect(stream.status).toBe(200);
      expect(stream.headers['content-type']).toMatch(/^text\/event-stream/);
    } finally {
      stream.close();
    }
  });
});
