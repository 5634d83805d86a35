// How every Starmap server listens (shared/http-server.ts listen): an IP address is bound with
// net.BoundSocket (no lookup), a name through fastify's lookup; the errors are those of listen(),
// and a server whose set-up fails leaves no socket behind.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createServer, listen } from '../shared/http-server.ts';
import { createLogger } from '../shared/logger.ts';

const opened: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((app) => app.close()));
});

function app(): FastifyInstance {
  const server = createServer({ logger: createLogger({ name: 'test', destination: { write: () => undefined } }) });
  server.get('/hello', async () => ({ hello: 'world' }));
  opened.push(server);
  return server;
}

/** A TCP server holding a port on 127.0.0.1, for the port-in-use case. */
async function holdPort(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const ipv6Loopback = await new Promise<boolean>((resolve) => {
  const probe = net.createServer();
  probe.once('error', () => resolve(false));
  probe.listen(0, '::1', () => probe.close(() => resolve(true)));
});

describe('listen', () => {
  it('binds an IPv4 address, reports the port it was given for port 0, and serves', async () => {
    const url = await listen(app(), '127.0.0.1', 0);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toMatch(/:0$/);
    const res = await fetch(`${url}/hello`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'world' });
  });

  it.skipIf(!ipv6Loopback)('binds an IPv6 address and shows it in brackets (needs ::1 on this machine)', async () => {
    const url = await listen(app(), '::1', 0);
    expect(url).toMatch(/^http:\/\/\[::1\]:\d+$/);
    expect((await fetch(`${url}/hello`)).status).toBe(200);
  });

  it('resolves a name (localhost, from the hosts file) and serves on it', async () => {
    const url = await listen(app(), 'localhost', 0);
    expect(url).toMatch(/^http:\/\/localhost:\d+$/);
    const port = new URL(url).port;
    expect((await fetch(`http://127.0.0.1:${port}/hello`)).status).toBe(200);
  });

  it('fails with EADDRINUSE for a port in use, and with EADDRNOTAVAIL for an address of no interface here', async () => {
    const held = await holdPort();
    try {
      await expect(listen(app(), '127.0.0.1', held.port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await held.close();
    }
    // 192.0.2.1 (TEST-NET-1) is on no interface: bind(2) refuses it; nothing is sent anywhere.
    await expect(listen(app(), '192.0.2.1', 0)).rejects.toMatchObject({ code: 'EADDRNOTAVAIL' });
  });

  it('binds nothing when a plugin fails to load', async () => {
    const held = await holdPort();
    const port = held.port;
    await held.close();
    const failing = app();
    failing.register(async () => {
      throw new Error('plugin failed');
    });
    await expect(listen(failing, '127.0.0.1', port)).rejects.toThrow('plugin failed');
    const again = await listen(app(), '127.0.0.1', port);
    expect(again).toBe(`http://127.0.0.1:${port}`);
  });
});
