// Normalising recorded orchestrator answers (test/orchestrator/api/wire-recording.test.ts): only the
// values that vary from run to run are replaced, each found by its field's place in the JSON (the
// documented list below), never by a pattern over the whole body. Everything else, the key order
// and the bytes between the values included, is compared as sent.

/**
 * Where varying values are, as `/`-separated paths through the parsed body: `*` is any one key or
 * array index, `[]` an array index only, a leading `**` any number of keys and indices. Each kind
 * is replaced by a placeholder:
 * - `version`: version timestamps, numbered by first appearance (equal values keep equal names, so
 *   "lastConfigChangeAt is the version" is still compared); a value that is no ISO timestamp (the
 *   Marathon version of /v2/info) is kept;
 * - `deployment`, `task`, `offer`: ids, numbered the same way (the Marathon-Deployment-Id header
 *   shares the deployment numbering);
 * - `time`: times of tasks, queue entries and offers (`<time>`);
 * - `port`: task host ports, which the launcher picks at random, the HTTP port and the leader
 *   address holding it (`<port>`);
 * - `seconds`: task life times of taskStats (`<seconds>`);
 * - `count`: offer statistics, which grow with every reconcile pass (`<count>`);
 * - `framework`: the framework id, made at the first start on a data dir (`<framework>`).
 */
export const VARYING: ReadonlyArray<{ path: string; kind: Kind }> = [
  { path: '**/version', kind: 'version' },
  { path: '**/lastScalingAt', kind: 'version' },
  { path: '**/lastConfigChangeAt', kind: 'version' },
  { path: 'versions/[]', kind: 'version' },
  { path: '[]', kind: 'version' }, // GET /v2/groups/{id}/versions: an array of versions
  { path: '**/deployments/[]/id', kind: 'deployment' },
  { path: '[]/id', kind: 'deployment' }, // GET /v2/deployments: an array of deployments
  { path: 'deploymentId', kind: 'deployment' },
  { path: '**/tasks/[]/id', kind: 'task' },
  { path: 'task/id', kind: 'task' },
  { path: '**/tasks/[]/ports/[]', kind: 'port' },
  { path: 'task/ports/[]', kind: 'port' },
  { path: '**/tasks/[]/startedAt', kind: 'time' },
  { path: '**/tasks/[]/stagedAt', kind: 'time' },
  { path: 'task/startedAt', kind: 'time' },
  { path: 'task/stagedAt', kind: 'time' },
  { path: 'queue/[]/since', kind: 'time' },
  { path: 'queue/[]/processedOffersSummary/processedOffersCount', kind: 'count' },
  { path: 'queue/[]/processedOffersSummary/unusedOffersCount', kind: 'count' },
  { path: 'queue/[]/processedOffersSummary/lastUnusedOfferAt', kind: 'time' },
  { path: 'queue/[]/processedOffersSummary/lastUsedOfferAt', kind: 'time' },
  { path: 'queue/[]/processedOffersSummary/*/[]/declined', kind: 'count' },
  { path: 'queue/[]/processedOffersSummary/*/[]/processed', kind: 'count' },
  { path: 'queue/[]/lastUnusedOffers/[]/offer/id', kind: 'offer' },
  { path: 'queue/[]/lastUnusedOffers/[]/timestamp', kind: 'time' },
  { path: '**/lifeTime/averageSeconds', kind: 'seconds' },
  { path: '**/lifeTime/medianSeconds', kind: 'seconds' },
  { path: 'http_config/http_port', kind: 'port' },
  { path: 'leader', kind: 'port' },
  { path: 'frameworkId', kind: 'framework' },
];

type Kind = 'version' | 'deployment' | 'task' | 'offer' | 'time' | 'seconds' | 'port' | 'count' | 'framework';
const NUMBERED: ReadonlySet<Kind> = new Set(['version', 'deployment', 'task', 'offer']);
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** Placeholders of one run: the same value gets the same name in every answer of the run. */
export class Placeholders {
  readonly #names = new Map<string, string>();
  readonly #counts = new Map<Kind, number>();

  name(kind: Kind, value: unknown): string {
    if (!NUMBERED.has(kind)) return `<${kind}>`;
    const key = `${kind}:${String(value)}`;
    let n = this.#names.get(key);
    if (!n) {
      const i = (this.#counts.get(kind) ?? 0) + 1;
      this.#counts.set(kind, i);
      this.#names.set(key, (n = `<${kind}-${i}>`));
    }
    return n;
  }
}

function matches(pattern: readonly string[], path: readonly string[]): boolean {
  if (pattern.length === 0) return path.length === 0;
  const [head, ...tail] = pattern;
  if (head === '**') {
    for (let skip = 0; skip <= path.length; skip++) if (matches(tail, path.slice(skip))) return true;
    return false;
  }
  if (path.length === 0) return false;
  const step = path[0]!;
  const fits = head === '*' || head === step || (head === '[]' && step.startsWith('#'));
  return fits && matches(tail, path.slice(1));
}

const RULES = VARYING.map((v) => ({ parts: v.path.split('/'), kind: v.kind }));

function kindAt(path: string[]): Kind | undefined {
  return RULES.find((r) => matches(r.parts, path))?.kind;
}

function walk(value: unknown, path: string[], names: Placeholders): unknown {
  if (path.length > 0 && (value === null || typeof value !== 'object')) {
    const kind = kindAt(path);
    if (kind && !(kind === 'version' && !ISO_TIME.test(String(value)))) return names.name(kind, value);
  }
  if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, `#${i}`], names));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    // A key starting with # is written ##…, so no key is taken for an array index.
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, [...path, k.startsWith('#') ? `#${k}` : k], names);
    return out;
  }
  return value;
}

/**
 * The body with its varying values replaced. A JSON body that JSON.stringify writes back byte for
 * byte is written back normalised; any other body (text, or JSON spelled otherwise) is kept as sent.
 */
export function normaliseBody(text: string, names: Placeholders): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (JSON.stringify(parsed) !== text) return text;
  return JSON.stringify(walk(parsed, [], names));
}
