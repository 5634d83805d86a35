// The collector's flags: star's (same names and defaults) plus fetch timeout, concurrency and a
// body size cap. A bad resources file stops start-up naming the file, the entry and the problem.
import { readFileSync } from 'node:fs';
import { addressFlag, LOG_LEVELS, numberFlag, parsedFlag, parseFlags, portFlag } from '../shared/cli.ts';
import { parseDnsServers } from '../shared/resolver.ts';
import { ResourceError, validateResource, type Resource } from './resources.ts';

export interface CollectorFlags {
  httpAddress: string;
  httpPort: number;
  httpRequestSeconds: number;
  resourcesFile: Resource[] | undefined;
  timeoutSeconds: number;
  concurrency: number;
  maxBodyBytes: number;
  insecure: boolean;
  dnsServers: string[] | undefined;
  logfile: string | undefined;
  logLevel: string;
}

/**
 * Reads a resources file: a JSON array of {id, url} (star's format), or the `{"resources": […]}`
 * document of `GET /resources`. Throws an Error naming the file and the entry's index.
 */
export function loadResourcesFile(path: string): Resource[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(`${path}: cannot read the file: ${code === 'ENOENT' ? 'no such file' : (code ?? (err as Error).message)}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path}: not valid JSON: ${(err as Error).message}`);
  }
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc) && Array.isArray((doc as { resources?: unknown }).resources)) {
    doc = (doc as { resources: unknown[] }).resources;
  }
  if (!Array.isArray(doc)) throw new Error(`${path}: expected a JSON array of {"id": "…", "url": "http://…"} objects`);
  const seen = new Map<string, number>();
  return doc.map((entry: unknown, index) => {
    let resource: Resource;
    try {
      resource = validateResource(entry);
    } catch (err) {
      if (err instanceof ResourceError) throw new Error(`${path}: entry at index ${index}: ${err.message}`);
      throw err;
    }
    const first = seen.get(resource.id);
    if (first !== undefined)
      throw new Error(`${path}: entry at index ${index}: id ${JSON.stringify(resource.id)} is already used by the entry at index ${first}`);
    seen.set(resource.id, index);
    return resource;
  });
}

export function parseCollectorFlags(argv: string[]): CollectorFlags {
  return parseFlags<CollectorFlags>(
    {
      name: 'collector',
      description:
        "Fetches, over and over, each resource (an HTTP URL, typically a probe's /status) and serves the latest " +
        'responses at GET /responses (star-compatible), with a live web UI at / that draws what the probes see. ' +
        'Resources come from --resources-file and from the REST API (POST, PUT and DELETE /resources).',
      examples: [
        ['collector --resources-file=resources.json', 'fetch the resources listed in the file every 5 s'],
        ['collector --http-port=9101 --http-request-seconds=1', 'start empty; add resources with POST /resources'],
      ],
      epilogue:
        'Endpoints: GET / (UI, /?example=true for sample data), GET|POST /resources, GET|PUT|DELETE /resources/{id}, ' +
        'GET /responses, GET /responses/{id}, GET /responses/example, GET /healthz, GET /metrics. Docs: docs/collector.md.',
      options: (y) =>
        y
          .option('http-address', { type: 'string', default: '0.0.0.0', describe: 'listen address', coerce: addressFlag('http-address') })
          .option('http-port', { default: 9001, describe: 'listen port (0 picks a free one)', coerce: portFlag('http-port') })
          .option('http-request-seconds', {
            default: 5,
            describe: 'seconds between fetches of each resource',
            coerce: numberFlag('http-request-seconds', 0.05, 86_400),
          })
          .option('resources-file', {
            type: 'string',
            describe: 'JSON file with the initial resources: an array of {"id": "…", "url": "http://…"}',
            coerce: parsedFlag('resources-file', loadResourcesFile),
          })
          .option('timeout-seconds', {
            default: 2,
            describe: 'deadline of each fetch: connect, headers and the whole body',
            coerce: numberFlag('timeout-seconds', 0.01, 600),
          })
          .option('concurrency', { default: 100, describe: 'most fetches in flight at once', coerce: numberFlag('concurrency', 1, 10_000, true) })
          .option('max-body-bytes', {
            default: 1024 * 1024,
            describe: 'largest response body kept; a larger one is reported as too-large',
            coerce: numberFlag('max-body-bytes', 1, 1024 * 1024 * 1024, true),
          })
          .option('insecure', { type: 'boolean', default: false, describe: 'do not verify TLS certificates of https resources' })
          .option('dns-servers', {
            type: 'string',
            describe: "DNS servers to ask instead of /etc/resolv.conf's, e.g. 10.96.0.10 or 127.0.0.1:5353 (names in /etc/hosts and localhost never need DNS)",
            coerce: parsedFlag('dns-servers', parseDnsServers),
          })
          .option('logfile', { type: 'string', describe: 'write logs to this file instead of stdout', coerce: parsedFlag('logfile', (path) => path) })
          .option('log-level', { type: 'string', default: 'info', choices: LOG_LEVELS, describe: 'log level' }) as never,
    },
    argv,
  );
}
