// The collector's flags: star's (same names and defaults) plus fetch timeout, concurrency and a
// body size cap. A bad resources file stops start-up naming the file, the entry and the problem.
import { readFileSync } from 'node:fs';
import { numberFlag, parsedFlag, parseFlags, type FlagTable, type FlagValues } from '../shared/cli.ts';
import { DNS_SERVERS_FLAG, listenFlags, LOG_FLAGS } from '../shared/agent-flags.ts';
import { parseAllowedHosts } from '../shared/web-guard.ts';
import { ResourceError, validateResource, type Resource } from './resources.ts';

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

/** The collector's flags, in --help order (shared/cli.ts: the yargs options, CollectorFlags and the defaults come from it). */
export const COLLECTOR_FLAGS = {
  ...listenFlags(9001),
  /** Names answered besides localhost, IP addresses, this machine's name and the listen address (shared/web-guard.ts). */
  'allowed-hosts': {
    type: 'string',
    describe:
      "comma-separated host names answered besides localhost, *.localhost, IP addresses, this machine's host name and --http-address (a leading dot admits a whole domain: .example.com); a request with another Host gets 403, a guard against DNS rebinding",
    coerce: parsedFlag('allowed-hosts', parseAllowedHosts),
  },
  'http-request-seconds': {
    default: 5,
    describe: 'seconds between fetches of each resource',
    coerce: numberFlag('http-request-seconds', 0.05, 86_400),
  },
  'resources-file': {
    type: 'string',
    describe: 'JSON file with the initial resources: an array of {"id": "…", "url": "http://…"}',
    coerce: parsedFlag('resources-file', loadResourcesFile),
  },
  'timeout-seconds': {
    default: 2,
    describe: 'deadline of each fetch: connect, headers and the whole body',
    coerce: numberFlag('timeout-seconds', 0.01, 600),
  },
  concurrency: { default: 100, describe: 'most fetches in flight at once', coerce: numberFlag('concurrency', 1, 10_000, true) },
  'max-body-bytes': {
    default: 1024 * 1024,
    describe: 'largest response body kept; a larger one is reported as too-large',
    coerce: numberFlag('max-body-bytes', 1, 1024 * 1024 * 1024, true),
  },
  insecure: { type: 'boolean', default: false, describe: 'do not verify TLS certificates of https resources' },
  ...DNS_SERVERS_FLAG,
  ...LOG_FLAGS,
} as const satisfies FlagTable;

export type CollectorFlags = FlagValues<typeof COLLECTOR_FLAGS>;

export function parseCollectorFlags(argv: string[]): CollectorFlags {
  return parseFlags(
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
      flags: COLLECTOR_FLAGS,
    },
    argv,
  );
}
