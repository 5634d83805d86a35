// Reading NetworkPolicy manifests as users keep them: single or multi-document YAML, JSON, or a
// List / NetworkPolicyList as `kubectl get netpol -A -o yaml` prints it. Anything that is not a
// NetworkPolicy is refused with the file, the document's index and its kind; a NetworkPolicy that
// the API server would refuse is refused with the file, the document, the field and the line
// (validate.ts says what is wrong). Pure: the caller reads the file.
import { parseAllDocuments, type Document } from 'yaml';
import { hasTemplate, placeholderFor } from './ip-template.ts';
import type { NetworkPolicyObject } from './types.ts';
import { validateNetworkPolicy, type FieldErrors } from './validate.ts';

/** Bounds on one manifest file: its size and the policies in it. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
export const MAX_POLICIES_PER_FILE = 1000;

export class ManifestError extends Error {}

export interface LoadedPolicy {
  policy: NetworkPolicyObject;
  /** Where it came from, for messages: `netpol/backend.yaml document 2` or `scenario.yaml /policies/0`. */
  origin: string;
}

const LIST_KINDS = new Set(['List', 'NetworkPolicyList']);
/** The one form an address template may take in a CIDR: the whole address, then the prefix length. */
const TEMPLATE_CIDR = /^\{\{\s*ip\s+[a-z0-9.-]+\/[a-z0-9.-]+\s*\}\}\/\d{1,3}$/;

/** Line (1-based) of a JSON pointer inside a YAML document, when the document knows it. */
export function lineOf(doc: Document | undefined, text: string, pointer: string): number | undefined {
  if (!doc) return undefined;
  const path = pointer
    .split('/')
    .slice(1)
    .filter((p) => p !== '')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  // Walk up to the nearest node that exists (an unknown field's parent still has a line).
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n), true) as { range?: [number, number] } | undefined;
    if (node?.range) return text.slice(0, node.range[0]).split('\n').length;
  }
  return undefined;
}

/**
 * Validates one NetworkPolicy value. With `templates`, `{{ip ns/pod}}` in ipBlocks is allowed: it is
 * validated with stand-in addresses chosen so that an except can lie inside its cidr (the cidr's
 * stand-in is a literal except's address, an except's stand-in the cidr's), and validated for real
 * once the addresses are known. Returns the policy as written (templates kept) with the API
 * server's defaults applied, or the field errors.
 */
export function checkPolicy(value: unknown, opts: { templates?: boolean } = {}): { policy: NetworkPolicyObject } | { errors: FieldErrors[] } {
  const written = new Map<string, string>();
  const result = validateNetworkPolicy(opts.templates ? withStandIns(value, written) : value);
  const malformed = [...written]
    .filter(([, text]) => !TEMPLATE_CIDR.test(text))
    .map(([path, text]) => ({
      path,
      errors: [`Invalid value: ${JSON.stringify(text)}: write an address template as {{ip namespace/pod}}/<prefix length>, e.g. {{ip x/b}}/32`],
    }));
  if (malformed.length > 0) return { errors: [...malformed, ...('errors' in result ? result.errors.filter((e) => !written.has(e.path)) : [])] };
  if ('errors' in result || written.size === 0) return result;
  const policy = structuredClone(result.policy);
  const restore = (peers: { ipBlock?: { cidr: string; except?: string[] } }[] | undefined, base: string) =>
    peers?.forEach((peer, p) => {
      if (!peer.ipBlock) return;
      peer.ipBlock.cidr = written.get(`${base}/${p}/ipBlock/cidr`) ?? peer.ipBlock.cidr;
      peer.ipBlock.except = peer.ipBlock.except?.map((e, i) => written.get(`${base}/${p}/ipBlock/except/${i}`) ?? e);
    });
  policy.spec.ingress?.forEach((r, i) => restore(r.from, `/spec/ingress/${i}/from`));
  policy.spec.egress?.forEach((r, i) => restore(r.to, `/spec/egress/${i}/to`));
  return { policy };
}

/** A copy of the value with stand-in addresses for templates; `written` gets path → template text. */
function withStandIns(value: unknown, written: Map<string, string>): unknown {
  const spec = (value as { spec?: unknown } | null)?.spec;
  if (!spec || typeof spec !== 'object') return value;
  const copy = structuredClone(value) as { spec: Record<string, unknown> };
  const addressOf = (cidr: string) => cidr.split('/')[0]!.trim();
  for (const [dir, key] of [
    ['ingress', 'from'],
    ['egress', 'to'],
  ] as const) {
    const rules = copy.spec[dir];
    if (!Array.isArray(rules)) continue;
    rules.forEach((rule: unknown, r) => {
      const peers = (rule as Record<string, unknown> | null)?.[key];
      if (!Array.isArray(peers)) return;
      peers.forEach((peer: unknown, p) => {
        const block = (peer as { ipBlock?: { cidr?: unknown; except?: unknown } } | null)?.ipBlock;
        if (!block || typeof block !== 'object') return;
        const base = `/spec/${dir}/${r}/${key}/${p}/ipBlock`;
        const except = Array.isArray(block.except) ? (block.except as unknown[]) : [];
        if (typeof block.cidr === 'string' && hasTemplate(block.cidr)) {
          written.set(`${base}/cidr`, block.cidr);
          const literal = except.find((e): e is string => typeof e === 'string' && !hasTemplate(e));
          block.cidr = literal ? block.cidr.replace(/^.*\//, `${addressOf(literal)}/`) : placeholderFor(block.cidr);
        }
        const inside = typeof block.cidr === 'string' ? addressOf(block.cidr) : undefined;
        except.forEach((e, i) => {
          if (typeof e !== 'string' || !hasTemplate(e)) return;
          written.set(`${base}/except/${i}`, e);
          except[i] = inside ? e.replace(/^.*\//, `${inside}/`) : placeholderFor(e);
        });
      });
    });
  }
  return copy;
}

/** `/spec/ingress/0/ports/0/port (line 12): must be …` lines for field errors. */
export function fieldErrorLines(errors: FieldErrors[], line: (pointer: string) => number | undefined, prefix = ''): string[] {
  return errors.flatMap((e) => {
    const l = line(e.path);
    return e.errors.map((m) => `${prefix}${e.path}${l ? ` (line ${l})` : ''}: ${m}`);
  });
}

/**
 * Every NetworkPolicy of one manifest file. Throws a ManifestError naming the file, the document
 * (1-based, with its line) and the kind or field at fault; all problems of the file at once.
 */
export function loadManifests(
  text: string,
  file: string,
  opts: {
    templates?: boolean;
    /** Takes an object of another kind (true: it is the caller's; its problems go to `problems`), e.g. the admin-tier kinds. */
    other?: (value: Record<string, unknown>, where: string, line: (pointer: string) => number | undefined, problems: string[]) => boolean;
  } = {},
): LoadedPolicy[] {
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) throw new ManifestError(`${file}: larger than ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB`);
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) throw new ManifestError(`${file}: not valid YAML/JSON`);
  const problems: string[] = [];
  const out: LoadedPolicy[] = [];
  docs.forEach((doc, d) => {
    // The line where the document's content starts (not its `---`).
    const start = (doc.contents as { range?: [number, number] } | null)?.range?.[0] ?? doc.range?.[0];
    const where = `document ${d + 1}${start !== undefined ? ` (line ${text.slice(0, start).split('\n').length})` : ''}`;
    if (doc.errors.length > 0) {
      problems.push(`${where}: not valid YAML/JSON: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`);
      return;
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return; // an empty document (a trailing ---)
    const one = (v: unknown, pointer: string) => {
      const kind = (v as { kind?: unknown } | null)?.kind;
      const apiVersion = (v as { apiVersion?: unknown } | null)?.apiVersion;
      const at = `${where}${pointer ? ` ${pointer}` : ''}`;
      if (typeof v !== 'object' || v === null || Array.isArray(v))
        return void problems.push(`${at}: not a Kubernetes object (expected a networking.k8s.io/v1 NetworkPolicy)`);
      if ((kind !== 'NetworkPolicy' || apiVersion !== 'networking.k8s.io/v1') && opts.other) {
        const line = (p: string) => lineOf(doc, text, `${pointer}${p === '/' ? '' : p}`);
        if (opts.other(v as Record<string, unknown>, at, line, problems)) return;
      }
      if (kind !== 'NetworkPolicy' || apiVersion !== 'networking.k8s.io/v1') {
        return void problems.push(
          `${at}: kind ${JSON.stringify(kind ?? null)}${apiVersion !== undefined ? ` (apiVersion ${JSON.stringify(apiVersion)})` : ''} is not a NetworkPolicy (networking.k8s.io/v1); only NetworkPolicy objects, a List or a NetworkPolicyList of them are read`,
        );
      }
      const r = checkPolicy(v, opts.templates ? { templates: true } : {});
      if ('errors' in r) problems.push(...fieldErrorLines(r.errors, (p) => lineOf(doc, text, `${pointer}${p === '/' ? '' : p}`), `${at}: `));
      else out.push({ policy: r.policy, origin: `${file} ${at}` });
    };
    const kind = (value as { kind?: unknown }).kind;
    if (typeof kind === 'string' && LIST_KINDS.has(kind)) {
      const items = (value as { items?: unknown }).items;
      if (!Array.isArray(items)) problems.push(`${where}: a ${kind} needs an items array`);
      else items.forEach((item, i) => one(item, `/items/${i}`));
    } else one(value, '');
  });
  if (out.length > MAX_POLICIES_PER_FILE) problems.push(`more than ${MAX_POLICIES_PER_FILE} policies in one file`);
  if (problems.length > 0) throw new ManifestError(`${file}: ${problems.length === 1 ? problems[0] : `\n  ${problems.slice(0, 20).join('\n  ')}`}`);
  return out;
}
