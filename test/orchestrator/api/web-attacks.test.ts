// What a web page elsewhere could make a browser do to the orchestrator (issue "Hardening and
// fidelity, round 2"), against real orchestrator processes on loopback, with the headers browsers
// send: a cross-site <form enctype="text/plain"> that created an app (with --auth=off) and locked
// the owner out of the login, DNS rebinding (a foreign Host), and what must keep working: Marathon
// clients' JSON, bodyless writes as curl and go-marathon send them, /ping for anyone.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTaskCgroups, startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { stopAll, tempDir } from '../../helpers/process.ts';
import { sendRaw } from '../../helpers/raw-http.ts';
import { waitFor } from '../../helpers/wait.ts';

const send = sendRaw;

/** What a browser sends when a page on http://evil.example auto-submits a form to the orchestrator. */
const FORM_FROM_EVIL = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', referer: 'http://evil.example/' };

let open: StartedOrchestrator; // --auth=off
let marker: string;
beforeAll(async () => {
  open = await startOrchestrator(['--auth=off', '--local-port-min=12800', '--local-port-max=12900', '--allowed-hosts=orchestrator.example,.corp.example']);
  marker = join(tempDir('web-attack-'), 'ran');
}, 30_000);
afterAll(async () => {
  await open?.proc.stop('SIGTERM');
  await stopAll();
  if (open) await removeTaskCgroups(open.dataDir);
});

/** A text/plain form's body: one field whose name and value together make a JSON app definition. */
const formApp = (id: string) => `{"id":"${id}","cmd":"touch ${marker}","instances":1,"x":"="}\r\n`;

describe('a page on another site cannot write (--auth=off)', () => {
  it('refuses the auto-submitted text/plain form that created an app: 403 for its Origin, 415 for its type without one', async () => {
    const cross = await send(open.port, 'POST', '/v2/apps', { ...FORM_FROM_EVIL, 'content-type': 'text/plain' }, formApp('/pwn'));
    expect(cross.status).toBe(403);
    expect(cross.body.message).toMatch(/^Cross-site request refused: Sec-Fetch-Site is "cross-site"/);
    // An older browser sends no Sec-Fetch-*: its Origin is enough.
    const old = await send(open.port, 'POST', '/v2/apps', { origin: 'http://evil.example', 'content-type': 'text/plain' }, formApp('/pwn'));
    expect(old.status).toBe(403);
    expect(old.body.message).toMatch(/Origin "http:\/\/evil.example" is not this orchestrator's own \(http:\/\/127\.0\.0\.1:\d+\)/);
    // And without any of those headers (what no browser does), a body that is not declared as JSON is refused.
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'text/plain; charset=utf-8',
      'application/jsonx',
    ]) {
      const r = await send(open.port, 'POST', '/v2/apps', { 'content-type': type }, formApp('/pwn'));
      expect(r.status, type).toBe(415);
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(r.body.message).toContain('Unsupported Media Type: send the body as JSON with Content-Type: application/json');
    }
    expect((await open.call('GET', '/v2/apps/pwn')).status).toBe(404);
    expect((await open.call('GET', '/v2/apps')).body.apps).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses a body without a Content-Type (fetch with a typeless Blob), and every other write from another origin', async () => {
    const typeless = await send(open.port, 'PUT', '/v2/apps/pwn', {}, formApp('/pwn'));
    expect(typeless.status).toBe(415);
    expect(typeless.body.message).toContain('got a body without a Content-Type');
    const json = { 'content-type': 'application/json' };
    for (const [method, path, body] of [
      ['PUT', '/v2/apps/pwn', formApp('/pwn')],
      ['POST', '/v2/groups', '{"id":"/pwn"}'],
      ['DELETE', '/v2/apps/pwn', undefined],
      ['DELETE', '/v2/leader', undefined],
      ['POST', '/v2/apps/pwn/restart', undefined],
    ] as const) {
      const foreign = await send(open.port, method, path, { ...json, origin: 'http://evil.example' }, body);
      expect(foreign.status, `${method} ${path}`).toBe(403);
      // Another page on this very host, on another port, is another origin (same-site, not same-origin).
      const sibling = await send(open.port, method, path, { ...json, origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-site' }, body);
      expect(sibling.status, `${method} ${path}`).toBe(403);
      expect((await send(open.port, method, path, { ...json, origin: 'null' }, body)).status).toBe(403);
    }
    expect((await open.call('GET', '/v2/apps')).body.apps).toEqual([]);
  });

  it("takes JSON in any spelling, from clients without an Origin and from the orchestrator's own origin; reads stay open", async () => {
    const app = (id: string) => JSON.stringify({ id, cmd: 'sleep 1000', instances: 0 });
    expect((await send(open.port, 'POST', '/v2/apps', { 'content-type': 'application/json; charset=utf-8' }, app('/j/a'))).status).toBe(201);
    expect((await send(open.port, 'POST', '/v2/apps', { 'content-type': 'Application/JSON;charset=UTF-8' }, app('/j/b'))).status).toBe(201);
    const own = { 'content-type': 'application/json', origin: `http://127.0.0.1:${open.port}`, 'sec-fetch-site': 'same-origin' };
    expect((await send(open.port, 'POST', '/v2/apps', own, app('/j/c'))).status).toBe(201);
    expect((await send(open.port, 'GET', '/v2/apps/j/a', { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' })).status).toBe(200);
  });

  it('keeps bodyless writes working as curl and go-marathon send them', async () => {
    await waitFor(async () => ((await open.call('GET', '/v2/deployments')).body as unknown[]).length === 0, { message: 'deployments done' });
    // curl -X POST: no Content-Type, no body.
    const restart = await send(open.port, 'POST', '/v2/apps/j/a/restart');
    expect(restart.status).toBe(200);
    expect(restart.body.deploymentId).toEqual(expect.any(String));
    // go-marathon: Content-Type and Accept application/json on every request, also without a body.
    const goMarathon = { 'content-type': 'application/json', accept: 'application/json' };
    expect((await send(open.port, 'POST', '/v2/apps/j/b/restart?force=true', goMarathon)).status).toBe(200);
    expect((await send(open.port, 'DELETE', '/v2/apps/j/b?force=true', goMarathon)).status).toBe(200);
    expect((await send(open.port, 'DELETE', '/v2/apps/j/c?force=true', { 'content-length': '0' })).status).toBe(200);
    expect((await send(open.port, 'DELETE', '/v2/apps/j/a?force=true')).status).toBe(200);
    // An empty body where one is needed is still Marathon's 400, and an unknown path still 404 whatever the type.
    expect((await send(open.port, 'POST', '/v2/apps', goMarathon)).status).toBe(400);
    expect((await send(open.port, 'POST', '/v2/nope', { 'content-type': 'text/plain' }, '{}')).status).toBe(404);
  });
});

describe('DNS rebinding: only allowed Host values are answered', () => {
  it('refuses a foreign Host with 403 naming it and the flag that admits it, before anything else', async () => {
    const rebound = await send(open.port, 'GET', '/v2/apps', { host: `evil.example:${open.port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body.message).toMatch(
      new RegExp(
        `^Host "evil\\.example:${open.port}" is not a name this orchestrator answers to \\(a guard against DNS rebinding; .*\\): start it with --allowed-hosts=evil\\.example to admit this name$`,
      ),
    );
    // The rebinding page is same-origin to itself: its writes carry its own Origin, and are refused by their Host.
    const write = await send(
      open.port,
      'POST',
      '/v2/apps',
      { host: `evil.example:${open.port}`, origin: `http://evil.example:${open.port}`, 'content-type': 'application/json' },
      formApp('/pwn'),
    );
    expect(write.status).toBe(403);
    expect((await send(open.port, 'GET', '/v2/info', { host: 'evil.example' })).status).toBe(403);
    expect((await send(open.port, 'GET', '/', { host: 'evil.example', accept: 'text/html' })).status).toBe(403);
    expect((await send(open.port, 'GET', '/v2/apps', { host: 'localhost.evil.example' })).status).toBe(403);
    expect((await send(open.port, 'GET', '/v2/apps', { host: 'evil.example@127.0.0.1' })).body.message).toMatch(/is not a host name or address/);
    expect((await open.call('GET', '/v2/apps')).body.apps.map((a: { id: string }) => a.id)).not.toContain('/pwn');
  });

  it('answers loopback names, IP addresses, this machine, the --allowed-hosts names, and /ping for any Host', async () => {
    const p = open.port;
    for (const host of [
      `127.0.0.1:${p}`,
      `localhost:${p}`,
      `LOCALHOST.:${p}`,
      `ui.localhost:${p}`,
      `127.0.0.2:${p}`,
      `[::1]:${p}`,
      `10.1.2.3:${p}`,
      hostname(),
    ]) {
      expect((await send(p, 'GET', '/v2/apps', { host })).status, host).toBe(200);
    }
    for (const host of ['orchestrator.example', 'corp.example', 'a.b.corp.example:80'])
      expect((await send(p, 'GET', '/v2/apps', { host })).status, host).toBe(200);
    for (const host of ['other.example', 'corp.example.evil', 'xcorp.example']) expect((await send(p, 'GET', '/v2/apps', { host })).status, host).toBe(403);
    const ping = await send(p, 'GET', '/ping', { host: 'health-checker.internal' });
    expect(ping.status).toBe(200);
    expect(ping.text).toBe('pong');
  });

  it('with auth on, a foreign Host gets 403 even without a token', async () => {
    const o = await startOrchestrator();
    try {
      expect((await send(o.port, 'GET', '/v2/apps', { host: 'evil.example' })).status).toBe(403);
      expect((await send(o.port, 'GET', '/v2/apps', { host: 'evil.example', ...o.authHeaders })).status).toBe(403);
      expect((await send(o.port, 'GET', '/v2/apps')).status).toBe(401);
    } finally {
      await o.proc.stop('SIGTERM');
    }
  });
});

describe('the login, from another site', () => {
  it('a page cannot lock the owner out: text/plain logins are 415 and count as no failure, a cross-site one 403', async () => {
    const o = await startOrchestrator(['--auth=on', '--admin-password=the-owners-password']);
    try {
      // Without the fix these were read as JSON: failed logins from the owner's own address, then a lock.
      for (let i = 0; i < 8; i++) {
        const r = await send(o.port, 'POST', '/acs/api/v1/auth/login', { 'content-type': 'text/plain' }, `{"uid":"admin","password":"guess-${i}","x":"="}\r\n`);
        expect(r.status).toBe(415);
      }
      const cross = await send(
        o.port,
        'POST',
        '/acs/api/v1/auth/login',
        { 'content-type': 'application/json', ...FORM_FROM_EVIL },
        '{"uid":"admin","password":"guess"}',
      );
      expect(cross.status).toBe(403);
      const owner = await send(
        o.port,
        'POST',
        '/acs/api/v1/auth/login',
        { 'content-type': 'application/json' },
        '{"uid":"admin","password":"the-owners-password"}',
      );
      expect(owner.status).toBe(200);
      expect(owner.body.token).toEqual(expect.any(String));
    } finally {
      await o.proc.stop('SIGTERM');
    }
  }, 30_000);
});
