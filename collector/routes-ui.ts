// The web UI: `GET /` (also `/?example=true`, which the page itself reads) serves index.html, and
// `GET /assets/<name>` the other files of collector/ui/. Names are checked against a strict
// pattern, so no path can leave the UI folder. A missing file is a JSON 404, never a crash.
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { uiAsset } from './assets.ts';

export interface UiRoutesOptions {
  /** The folder to read from when running from source (tests); default: collector/ui. */
  dir?: string;
}

export const uiRoutes: FastifyPluginAsync<UiRoutesOptions> = async (app, { dir }) => {
  const lookup = (name: string) => (dir === undefined ? uiAsset(name) : uiAsset(name, dir));
  const send = (reply: FastifyReply, name: string, missing: string) => {
    const asset = lookup(name);
    if (!asset) return reply.code(404).send({ message: missing });
    return reply.type(asset.contentType).header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').send(asset.body);
  };

  const index = async (_req: unknown, reply: FastifyReply) =>
    send(reply, 'index.html', 'the web UI is not available: collector/ui/index.html is missing from this build');
  app.get('/', index);
  app.get('/index.html', index);

  app.get<{ Params: { '*': string } }>('/assets/*', async (req, reply) => {
    const name = req.params['*'];
    return send(reply, name, `no asset named ${JSON.stringify(name)}`);
  });
};
