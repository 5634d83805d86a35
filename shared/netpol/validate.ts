// Validation of networking.k8s.io/v1 NetworkPolicy documents as the Kubernetes API server does it
// (pkg/apis/networking/validation and apimachinery's object-meta and label-selector rules), plus
// strict decoding: an unknown or ill-typed field is refused with its JSON pointer path, as
// `kubectl apply` (server-side strict field validation) refuses it. Pure: no I/O.
//
// What a valid document turns into (the contract between the orchestrator and the scenarios):
// - defaults applied as the API server's defaulting does: metadata.namespace "default",
//   spec.podSelector {}, every port's protocol TCP, and spec.policyTypes, when absent or empty,
//   ["Ingress"] plus "Egress" when spec.egress has at least one rule;
// - server-managed metadata (uid, resourceVersion, managedFields, …, as `kubectl get -o yaml`
//   prints them) accepted and dropped; JSON null read as "absent", as Go's decoder does;
// - CIDRs kept as written: host bits are accepted (`10.1.2.3/8` is 10.0.0.0/8), as the v1 API has
//   always accepted them; users of a CIDR mask it (parseCidr gives the network).
// Deliberate departures, each stricter than the legacy API and each with a clear message:
// IPv4-mapped IPv6 CIDRs (`::ffff:1.2.3.4/120`, read differently by different software) are refused;
// `generateName` without `name` is refused (a policy needs a stable name here).
// Every document costs bounded work: at most MAX_VALUES JSON values are looked at.
// About 400 lines on purpose: one walk over one document, whose checks share its error list and
// its value budget; the name and label rules it applies are names.ts.
import type {
  IPBlock,
  LabelSelector,
  LabelSelectorRequirement,
  NetworkPolicyObject,
  NetworkPolicyPeer,
  NetworkPolicyPort,
  NetworkPolicySpec,
  PolicyType,
  Protocol,
} from './types.ts';
import { dns1123LabelErrors, dns1123Offence, dns1123SubdomainErrors, labelKeyErrors, labelValueErrors, portNameErrors } from './names.ts';

/** "not an RFC 1123 subdomain: '_' (character 4) is not allowed; " before apimachinery's message (over-long names have none). */
const offence = (v: string, rule: 'label' | 'subdomain'): string => {
  const what = dns1123Offence(v.slice(0, 300), rule);
  return what ? `not an RFC 1123 ${rule}: ${what}; ` : '';
};

export interface FieldErrors {
  /** JSON pointer (RFC 6901) of the offending field, e.g. /spec/ingress/0/from/0/ipBlock/cidr. */
  path: string;
  errors: string[];
}

export type NetworkPolicyValidation = { policy: NetworkPolicyObject } | { errors: FieldErrors[] };

/** Bound on the JSON values one document may make the validator (and later the renderer) look at. */
export const MAX_VALUES = 10_000;
const MAX_ANNOTATION_BYTES = 256 * 1024;

const OBJECT_META_KEYS = [
  'name',
  'generateName',
  'namespace',
  'labels',
  'annotations',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'ownerReferences',
  'finalizers',
  'managedFields',
  'selfLink',
];

/** JSON pointer escaping of one key (label keys contain '/'). */
export function pointerKey(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

// ---------------------------------------------------------------------------------------------
// CIDRs

export interface Cidr {
  family: 4 | 6;
  /** The prefix length. */
  prefix: number;
  /** The network address (host bits cleared). */
  network: bigint;
  /** The network as text, e.g. 10.0.0.0/8 or 2001:db8:0:0:0:0:0:0/64 (uncompressed IPv6). */
  text: string;
}

function parseIPv4(s: string): bigint | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0n;
  for (const p of parts) {
    // Leading zeros are read as decimal, as the API server's legacy parser reads them.
    if (!/^[0-9]{1,3}$/.test(p) || Number(p) > 255) return undefined;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

function parseIPv6(s: string): bigint | undefined {
  // An embedded IPv4 tail (e.g. 64:ff9b::1.2.3.4) stands for the last two groups: parse the rest
  // with two zero groups in its place, then add it.
  let v4 = 0n;
  let text = s;
  if (s.includes('.')) {
    const at = s.lastIndexOf(':');
    const tail = parseIPv4(s.slice(at + 1));
    if (tail === undefined) return undefined;
    v4 = tail;
    text = `${s.slice(0, at + 1)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string): bigint[] | undefined => {
    if (h === '') return [];
    const out: bigint[] = [];
    for (const g of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(BigInt(`0x${g}`));
    }
    return out;
  };
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !rest) return undefined;
  const total = head.length + rest.length;
  if (halves.length === 2 ? total > 7 : total !== 8) return undefined;
  const all = [...head, ...Array<bigint>(8 - total).fill(0n), ...rest];
  return all.reduce((n, g) => (n << 16n) | g, 0n) | v4;
}

/** Parses `addr/len` (IPv4 or IPv6, host bits allowed) or says why it is not a CIDR. */
export function parseCidr(s: string): Cidr | { error: string } {
  const invalid = { error: `Invalid value: ${JSON.stringify(s.slice(0, 64))}: must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)` };
  if (s.length > 64) return invalid;
  const slash = s.indexOf('/');
  if (slash < 0 || slash !== s.lastIndexOf('/')) return invalid;
  const addr = s.slice(0, slash);
  const len = s.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(len)) return invalid;
  const prefix = Number(len);
  const family = addr.includes(':') ? 6 : 4;
  const bits = family === 4 ? 32 : 128;
  if (prefix > bits) return invalid;
  const n = family === 4 ? parseIPv4(addr) : parseIPv6(addr);
  if (n === undefined) return invalid;
  if (family === 6 && n >> 32n === 0xffffn) return { error: `Invalid value: ${JSON.stringify(s)}: must not have an IPv4-mapped IPv6 address` };
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  const network = n & mask;
  const text =
    family === 4
      ? [24n, 16n, 8n, 0n].map((sh) => String((network >> sh) & 0xffn)).join('.')
      : [...Array(8).keys()].map((i) => ((network >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');
  return { family, prefix, network, text: `${text}/${prefix}` };
}

/** Is `inner` a strict subset of `outer` (same family, longer prefix, inside it)? */
export function cidrStrictlyInside(inner: Cidr, outer: Cidr): boolean {
  if (inner.family !== outer.family || inner.prefix <= outer.prefix) return false;
  const bits = BigInt(outer.family === 4 ? 32 : 128);
  return inner.network >> (bits - BigInt(outer.prefix)) === outer.network >> (bits - BigInt(outer.prefix));
}

// ---------------------------------------------------------------------------------------------
// The validator

class TooLarge extends Error {}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates and normalises one NetworkPolicy document; see the top of this file. */
export function validateNetworkPolicy(doc: unknown): NetworkPolicyValidation {
  const errors = new Map<string, string[]>();
  let budget = MAX_VALUES;
  const add = (path: string, msg: string): undefined => {
    const p = path === '' ? '/' : path;
    const e = errors.get(p);
    if (e) e.push(msg);
    else errors.set(p, [msg]);
    return undefined;
  };
  const spend = (): void => {
    if (--budget < 0) throw new TooLarge();
  };
  /** An object with only `keys` (null/absent: undefined without error). */
  const object = (v: unknown, path: string, keys: readonly string[]): Obj | undefined => {
    spend();
    if (v === undefined || v === null) return undefined;
    if (!isObj(v)) return add(path, 'must be an object');
    for (const k of Object.keys(v)) if ((spend(), !keys.includes(k))) add(`${path}/${pointerKey(k)}`, `unknown field (expected one of: ${keys.join(', ')})`);
    return v;
  };
  const array = (v: unknown, path: string): unknown[] | undefined => {
    spend();
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return add(path, 'must be an array');
    return v;
  };
  const string = (v: unknown, path: string): string | undefined => {
    spend();
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') return add(path, 'must be a string');
    return v;
  };
  const strings = (v: unknown, path: string): string[] | undefined => array(v, path)?.map((x, i) => string(x, `${path}/${i}`) ?? '');

  const labelMap = (v: unknown, path: string, checkValue = labelValueErrors): Record<string, string> | undefined => {
    spend();
    if (v === undefined || v === null) return undefined;
    if (!isObj(v)) return add(path, 'must be an object of label keys to string values');
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(v)) {
      const kp = `${path}/${pointerKey(k)}`;
      for (const m of labelKeyErrors(k)) add(kp, m);
      const s = string(val, kp) ?? '';
      for (const m of checkValue(s)) add(kp, `Invalid value: ${JSON.stringify(s.slice(0, 100))}: ${m}`);
      out[k] = s;
    }
    return out;
  };

  const selector = (v: unknown, path: string): LabelSelector | undefined => {
    const o = object(v, path, ['matchLabels', 'matchExpressions']);
    if (!o) return undefined;
    const out: LabelSelector = {};
    const ml = labelMap(o.matchLabels, `${path}/matchLabels`);
    if (ml) out.matchLabels = ml;
    const exprs = array(o.matchExpressions, `${path}/matchExpressions`);
    if (exprs) {
      out.matchExpressions = exprs.map((x, i): LabelSelectorRequirement => {
        const ep = `${path}/matchExpressions/${i}`;
        const e = object(x, ep, ['key', 'operator', 'values']) ?? {};
        const key = string(e.key, `${ep}/key`) ?? '';
        for (const m of labelKeyErrors(key)) add(`${ep}/key`, m);
        const operator = string(e.operator, `${ep}/operator`) ?? '';
        const values = (array(e.values, `${ep}/values`) ?? []).map((x, j) => {
          const val = string(x, `${ep}/values/${j}`) ?? '';
          for (const m of labelValueErrors(val)) add(`${ep}/values/${j}`, `Invalid value: ${JSON.stringify(val.slice(0, 100))}: ${m}`);
          return val;
        });
        if (operator === 'In' || operator === 'NotIn') {
          if (values.length === 0) add(`${ep}/values`, "Required value: must be specified when `operator` is 'In' or 'NotIn'");
        } else if (operator === 'Exists' || operator === 'DoesNotExist') {
          if (values.length > 0) add(`${ep}/values`, "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
        } else {
          add(
            `${ep}/operator`,
            `Invalid value: ${JSON.stringify(operator.slice(0, 100))}: not a valid selector operator (supported: In, NotIn, Exists, DoesNotExist)`,
          );
        }
        const req: LabelSelectorRequirement = { key, operator: operator as LabelSelectorRequirement['operator'] };
        if (e.values !== undefined && e.values !== null) req.values = values;
        return req;
      });
    }
    return out;
  };

  const cidr = (v: unknown, path: string): { raw: string; parsed?: Cidr } | undefined => {
    const s = string(v, path);
    if (s === undefined || s === '') return add(path, 'Required value');
    const c = parseCidr(s);
    if ('error' in c) return (add(path, c.error), { raw: s });
    return { raw: s, parsed: c };
  };

  const peer = (v: unknown, path: string): NetworkPolicyPeer => {
    const o = object(v, path, ['podSelector', 'namespaceSelector', 'ipBlock']) ?? {};
    const out: NetworkPolicyPeer = {};
    const ps = selector(o.podSelector, `${path}/podSelector`);
    if (ps) out.podSelector = ps;
    const ns = selector(o.namespaceSelector, `${path}/namespaceSelector`);
    if (ns) out.namespaceSelector = ns;
    const ib = object(o.ipBlock, `${path}/ipBlock`, ['cidr', 'except']);
    if (ib) {
      const whole = cidr(ib.cidr, `${path}/ipBlock/cidr`);
      const block: IPBlock = { cidr: whole?.raw ?? '' };
      const except = array(ib.except, `${path}/ipBlock/except`);
      if (except) {
        block.except = except.map((x, i) => {
          const ep = `${path}/ipBlock/except/${i}`;
          const c = cidr(x, ep);
          if (c?.parsed && whole?.parsed && !cidrStrictlyInside(c.parsed, whole.parsed))
            add(ep, `Invalid value: ${JSON.stringify(c.raw)}: must be a strict subset of \`cidr\` (${whole.raw})`);
          return c?.raw ?? '';
        });
      }
      out.ipBlock = block;
    }
    const count = [out.podSelector, out.namespaceSelector, out.ipBlock].filter((x) => x !== undefined).length;
    if (count === 0) add(path, 'Required value: must specify a peer (podSelector, namespaceSelector or ipBlock)');
    else if (count > 1 && out.ipBlock) add(path, 'Forbidden: may not specify both ipBlock and another peer');
    return out;
  };

  const port = (v: unknown, path: string): NetworkPolicyPort => {
    const o = object(v, path, ['protocol', 'port', 'endPort']) ?? {};
    spend();
    const proto = string(o.protocol, `${path}/protocol`) ?? 'TCP';
    if (proto !== 'TCP' && proto !== 'UDP' && proto !== 'SCTP')
      add(`${path}/protocol`, `Unsupported value: ${JSON.stringify(proto.slice(0, 100))}: supported values: "TCP", "UDP", "SCTP"`);
    const out: NetworkPolicyPort = { protocol: proto as Protocol };
    const p = o.port;
    const endPort = o.endPort === null ? undefined : o.endPort;
    const validNumber = (n: unknown, at: string): n is number => {
      if (typeof n !== 'number' || !Number.isInteger(n)) return add(at, 'must be an integer') ?? false;
      if (n < 1 || n > 65535) return add(at, `Invalid value: ${n}: must be between 1 and 65535, inclusive`) ?? false;
      return true;
    };
    if (typeof p === 'string') {
      out.port = p;
      for (const m of portNameErrors(p)) add(`${path}/port`, `Invalid value: ${JSON.stringify(p.slice(0, 100))}: ${m}`);
      if (endPort !== undefined) add(`${path}/endPort`, 'Invalid value: may not be specified when `port` is non-numeric');
    } else if (p !== undefined && p !== null) {
      if (typeof p !== 'number') add(`${path}/port`, 'must be a port number or a port name');
      else if (validNumber(p, `${path}/port`)) out.port = p;
      if (endPort !== undefined && validNumber(endPort, `${path}/endPort`)) {
        if (typeof p === 'number' && endPort < p) add(`${path}/endPort`, `Invalid value: ${endPort}: must be greater than or equal to \`port\``);
        out.endPort = endPort;
      }
    } else if (endPort !== undefined) {
      add(`${path}/endPort`, 'Invalid value: may not be specified when `port` is not specified');
    }
    return out;
  };

  const rules = <K extends 'from' | 'to'>(v: unknown, path: string, peersKey: K) =>
    array(v, path)?.map((x, i) => {
      const rp = `${path}/${i}`;
      const o = object(x, rp, ['ports', peersKey]) ?? {};
      const rule: { ports?: NetworkPolicyPort[] } & Partial<Record<K, NetworkPolicyPeer[]>> = {};
      const ports = array(o.ports, `${rp}/ports`);
      if (ports) rule.ports = ports.map((p, j) => port(p, `${rp}/ports/${j}`));
      const peers = array(o[peersKey], `${rp}/${peersKey}`);
      if (peers) rule[peersKey] = peers.map((p, j) => peer(p, `${rp}/${peersKey}/${j}`)) as (typeof rule)[K];
      return rule;
    });

  const policy = (d: unknown): NetworkPolicyObject | undefined => {
    if (!isObj(d)) return add('', 'must be an object (a networking.k8s.io/v1 NetworkPolicy)');
    const top = object(d, '', ['apiVersion', 'kind', 'metadata', 'spec', 'status'])!;
    const apiVersion = string(top.apiVersion, '/apiVersion');
    if (apiVersion === undefined) add('/apiVersion', 'Required value: networking.k8s.io/v1');
    else if (apiVersion !== 'networking.k8s.io/v1')
      add('/apiVersion', `Unsupported value: ${JSON.stringify(apiVersion.slice(0, 100))}: supported values: "networking.k8s.io/v1"`);
    const kind = string(top.kind, '/kind');
    if (kind === undefined) add('/kind', 'Required value: NetworkPolicy');
    else if (kind !== 'NetworkPolicy') add('/kind', `Unsupported value: ${JSON.stringify(kind.slice(0, 100))}: supported values: "NetworkPolicy"`);
    if (top.status !== undefined && top.status !== null && !isObj(top.status)) add('/status', 'must be an object');

    const m = object(top.metadata, '/metadata', OBJECT_META_KEYS) ?? {};
    const name = string(m.name, '/metadata/name');
    if (name === undefined || name === '')
      add('/metadata/name', `Required value: name is required${m.generateName ? ' (generateName is not supported: a policy needs a stable name)' : ''}`);
    else
      for (const e of dns1123SubdomainErrors(name))
        add('/metadata/name', `Invalid value: ${JSON.stringify(name.slice(0, 300))}: ${offence(name, 'subdomain')}${e}`);
    const namespace = string(m.namespace, '/metadata/namespace') || 'default';
    for (const e of dns1123LabelErrors(namespace))
      add('/metadata/namespace', `Invalid value: ${JSON.stringify(namespace.slice(0, 100))}: ${offence(namespace, 'label')}${e}`);
    const labels = labelMap(m.labels, '/metadata/labels');
    // Annotation keys follow the label-key rules; values are free text, bounded in total as in Kubernetes.
    let annBytes = 0;
    const annotations = labelMap(m.annotations, '/metadata/annotations', (val) => ((annBytes += Buffer.byteLength(val)), []));
    for (const k of Object.keys(annotations ?? {})) annBytes += k.length;
    if (annBytes > MAX_ANNOTATION_BYTES) add('/metadata/annotations', `Too long: must have at most ${MAX_ANNOTATION_BYTES} bytes`);
    for (const k of ['generation', 'deletionGracePeriodSeconds'] as const)
      if (m[k] !== undefined && m[k] !== null && typeof m[k] !== 'number') add(`/metadata/${k}`, 'must be an integer');
    for (const k of ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'selfLink', 'generateName'] as const) string(m[k], `/metadata/${k}`);
    for (const k of ['ownerReferences', 'finalizers', 'managedFields'] as const) array(m[k], `/metadata/${k}`);

    const s = object(top.spec, '/spec', ['podSelector', 'ingress', 'egress', 'policyTypes']) ?? {};
    const spec: NetworkPolicySpec = { podSelector: selector(s.podSelector, '/spec/podSelector') ?? {} };
    const ingress = rules(s.ingress, '/spec/ingress', 'from');
    if (ingress) spec.ingress = ingress;
    const egress = rules(s.egress, '/spec/egress', 'to');
    if (egress) spec.egress = egress;
    const types = strings(s.policyTypes, '/spec/policyTypes');
    if (types && types.length > 2) add('/spec/policyTypes', 'Invalid value: may not specify more than two policyTypes');
    else
      types?.forEach(
        (t, i) =>
          t !== 'Ingress' &&
          t !== 'Egress' &&
          add(`/spec/policyTypes/${i}`, `Unsupported value: ${JSON.stringify(t.slice(0, 100))}: supported values: "Ingress", "Egress"`),
      );
    spec.policyTypes = types && types.length > 0 ? (types as PolicyType[]) : (egress?.length ?? 0) > 0 ? ['Ingress', 'Egress'] : ['Ingress'];

    const metadata: NetworkPolicyObject['metadata'] = { name: name ?? '', namespace };
    if (labels) metadata.labels = labels;
    if (annotations) metadata.annotations = annotations;
    return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata, spec };
  };

  let result: NetworkPolicyObject | undefined;
  try {
    result = policy(doc);
  } catch (err) {
    if (!(err instanceof TooLarge)) throw err;
    return { errors: [{ path: '/', errors: [`the document is too large: Starmap reads at most ${MAX_VALUES} values per NetworkPolicy`] }] };
  }
  if (errors.size > 0 || !result) return { errors: [...errors].map(([path, errs]) => ({ path, errors: errs })) };
  return { policy: result };
}
