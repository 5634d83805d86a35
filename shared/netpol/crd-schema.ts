// Validation of a custom resource against its CRD's structural schema (the OpenAPI v3 subset that
// apiextensions-apiserver accepts), as the API server validates a ClusterNetworkPolicy, an
// AdminNetworkPolicy or a BaselineAdminNetworkPolicy: the keywords those CRDs use, their
// `x-kubernetes-validations` CEL rules (each rule a CRD of shared/netpol/crd/ carries is written
// here as code; an unknown one fails loudly at the first use, so a CRD update cannot slip a rule
// past us), list types, and strict decoding (an unknown field is refused, as `kubectl apply` with
// server-side strict field validation refuses it). Messages follow the API server's:
// `Invalid value: 1001: should be less than or equal to 1000`, `Unsupported value: "Allow":
// supported values: "Accept", "Deny", "Pass"`, `Required value`, `Too many: 26: must have at most
// 25 items`, `Duplicate value: "10.0.0.0/8"`. Pure: no I/O; every document costs bounded work.
import { RE2JS } from 're2js';
import { parseCidr, pointerKey, type FieldErrors } from './validate.ts';

export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  properties?: Record<string, StructuralSchema>;
  additionalProperties?: StructuralSchema | boolean;
  items?: StructuralSchema;
  required?: string[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}

/** Bound on the JSON values one document may make the validator look at. */
export const MAX_CRD_VALUES = 20_000;

type Json = unknown;
const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Json, key: string): boolean => isObject(o) && o[key] !== undefined && o[key] !== null;
const text = (v: Json): string =>
  typeof v === 'string' ? JSON.stringify(v.slice(0, 100)) : isObject(v) ? '"object"' : Array.isArray(v) ? '"array"' : String(v);

/**
 * The CEL rules of the policy CRDs, as code. Each takes the value the rule is attached to (and
 * the whole object, for rules on the root) and says whether it holds.
 */
const CEL_RULES: Record<string, (self: Json) => boolean> = {
  'self.start < self.end': (self) => isObject(self) && typeof self.start === 'number' && typeof self.end === 'number' && self.start < self.end,
  'isCIDR(self)': (self) => typeof self === 'string' && !('error' in parseCidr(self)) && !/^\s|\s$/.test(self),
  "self.metadata.name == 'default'": (self) => isObject(self) && isObject(self.metadata) && self.metadata.name === 'default',
  '!(self.to.exists(peer, has(peer.networks) || has(peer.nodes) || has(peer.domainNames)) && has(self.protocols) && self.protocols.exists(protocol, has(protocol.destinationNamedPort)))':
    (self) => !(peersOutsidePods(self, ['networks', 'nodes', 'domainNames']) && listHas(self, 'protocols', 'destinationNamedPort')),
  '!(self.to.exists(peer, has(peer.networks) || has(peer.nodes) || has(peer.domainNames)) && has(self.ports) && self.ports.exists(port, has(port.namedPort)))':
    (self) => !(peersOutsidePods(self, ['networks', 'nodes', 'domainNames']) && listHas(self, 'ports', 'namedPort')),
  '!(self.to.exists(peer, has(peer.networks) || has(peer.nodes)) && has(self.ports) && self.ports.exists(port, has(port.namedPort)))': (self) =>
    !(peersOutsidePods(self, ['networks', 'nodes']) && listHas(self, 'ports', 'namedPort')),
};

function peersOutsidePods(rule: Json, keys: string[]): boolean {
  const to = isObject(rule) ? rule.to : undefined;
  return Array.isArray(to) && to.some((peer) => keys.some((k) => has(peer, k)));
}

function listHas(rule: Json, list: string, key: string): boolean {
  const items = isObject(rule) ? rule[list] : undefined;
  return Array.isArray(items) && items.some((item) => has(item, key));
}

/** Whether every CEL rule of a schema is one this module implements (checked by the tests). */
export function unknownRules(schema: StructuralSchema): string[] {
  const out: string[] = [];
  const walk = (s: StructuralSchema | boolean | undefined): void => {
    if (typeof s !== 'object') return;
    for (const v of s['x-kubernetes-validations'] ?? []) if (!(v.rule in CEL_RULES)) out.push(v.rule);
    for (const p of Object.values(s.properties ?? {})) walk(p);
    walk(s.items);
    walk(s.additionalProperties);
  };
  walk(schema);
  return out;
}

/** The API server's path form of a JSON pointer: /spec/ingress/0/action -> spec.ingress[0].action. */
export function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc === '' ? seg : `${acc}.${seg}`), '');
}

/**
 * Every violation of `schema` by `value`, as field errors with JSON pointer paths. `skip` names
 * pointers whose content the caller validates itself (metadata, as the API server does).
 */
export function validateStructural(value: Json, schema: StructuralSchema, skip: ReadonlySet<string> = new Set()): FieldErrors[] {
  const errors = new Map<string, string[]>();
  const add = (path: string, msg: string): void => {
    const list = errors.get(path);
    if (list) list.push(msg);
    else errors.set(path, [msg]);
  };
  let budget = MAX_CRD_VALUES;

  const walk = (v: Json, s: StructuralSchema, path: string): void => {
    if (--budget < 0) {
      if (budget === -1) add(path || '/', `Too many: more than ${MAX_CRD_VALUES} values in one document`);
      return;
    }
    if (skip.has(path)) return;
    const at = fieldPath(path) || '<root>';
    if (v === null) return; // JSON null reads as absent, as Go's decoder does (a required field then says so)
    if (s.type !== undefined && !typeMatches(v, s.type)) {
      add(path, `Invalid value: ${text(v)}: ${at} in body must be of type ${s.type}: ${text(typeOf(v))}`);
      return;
    }
    if (s.enum && !s.enum.includes(v)) add(path, `Unsupported value: ${text(v)}: supported values: ${s.enum.map((e) => JSON.stringify(e)).join(', ')}`);
    if (typeof v === 'string') {
      if (s.maxLength !== undefined && [...v].length > s.maxLength) add(path, `Too long: may not be more than ${s.maxLength} bytes`);
      if (s.minLength !== undefined && [...v].length < s.minLength)
        add(path, `Invalid value: ${text(v)}: ${at} in body should be at least ${s.minLength} chars long`);
      if (s.pattern !== undefined && !pattern(s.pattern).matcher(v).find()) add(path, `Invalid value: ${text(v)}: ${at} in body should match '${s.pattern}'`);
    }
    if (typeof v === 'number') {
      if (s.format === 'int32' && (v < -(2 ** 31) || v >= 2 ** 31)) add(path, `Invalid value: ${v}: ${at} in body must be of type int32`);
      if (s.minimum !== undefined && v < s.minimum) add(path, `Invalid value: ${v}: ${at} in body should be greater than or equal to ${s.minimum}`);
      if (s.maximum !== undefined && v > s.maximum) add(path, `Invalid value: ${v}: ${at} in body should be less than or equal to ${s.maximum}`);
    }
    if (Array.isArray(v)) {
      if (s.maxItems !== undefined && v.length > s.maxItems) add(path, `Too many: ${v.length}: must have at most ${s.maxItems} items`);
      if (s.minItems !== undefined && v.length < s.minItems) add(path, `Invalid value: ${v.length}: ${at} in body should have at least ${s.minItems} items`);
      const seen = new Map<string, number>();
      v.forEach((item, i) => {
        if (s.items) walk(item, s.items, `${path}/${i}`);
        const listType = s['x-kubernetes-list-type'];
        if (listType === 'set' || listType === 'map') {
          const key =
            listType === 'set'
              ? JSON.stringify(item)
              : JSON.stringify((s['x-kubernetes-list-map-keys'] ?? []).map((k) => (isObject(item) ? item[k] : undefined)));
          if (seen.has(key)) add(`${path}/${i}`, `Duplicate value: ${listType === 'set' ? text(item) : key}`);
          else seen.set(key, i);
        }
      });
    }
    if (isObject(v)) {
      const keys = Object.keys(v).filter((k) => v[k] !== null);
      if (s.maxProperties !== undefined && keys.length > s.maxProperties)
        add(path, `Invalid value: ${keys.length}: ${at} in body should have at most ${s.maxProperties} properties`);
      if (s.minProperties !== undefined && keys.length < s.minProperties)
        add(path, `Invalid value: ${keys.length}: ${at} in body should have at least ${s.minProperties} properties`);
      for (const r of s.required ?? []) if (v[r] === undefined || v[r] === null) add(`${path}/${pointerKey(r)}`, 'Required value');
      for (const [k, item] of Object.entries(v)) {
        const sub = s.properties?.[k] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
        if (sub) walk(item, sub, `${path}/${pointerKey(k)}`);
        else if (s.properties !== undefined && s.additionalProperties !== true)
          add(`${path}/${pointerKey(k)}`, `unknown field ${JSON.stringify(`${fieldPath(path) ? `${fieldPath(path)}.` : ''}${k}`)}`);
      }
    }
    for (const rule of s['x-kubernetes-validations'] ?? []) {
      const check = CEL_RULES[rule.rule];
      if (!check) throw new Error(`CRD rule not implemented in shared/netpol/crd-schema.ts: ${rule.rule}`);
      if (!check(v)) add(path, `Invalid value: ${text(v)}: ${rule.message ?? `failed rule: ${rule.rule}`}`);
    }
  };
  walk(value, schema, '');
  return [...errors].map(([path, errs]) => ({ path: path || '/', errors: errs }));
}

// The API server matches patterns with Go's RE2: linear time whatever the input, as re2js is.
const compiled = new Map<string, RE2JS>();
function pattern(source: string): RE2JS {
  let re = compiled.get(source);
  if (!re) compiled.set(source, (re = RE2JS.compile(source)));
  return re;
}

function typeOf(v: Json): string {
  if (Array.isArray(v)) return 'array';
  if (Number.isInteger(v)) return 'integer';
  return typeof v;
}

function typeMatches(v: Json, type: NonNullable<StructuralSchema['type']>): boolean {
  switch (type) {
    case 'object':
      return isObject(v);
    case 'array':
      return Array.isArray(v);
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    default:
      return typeof v === type;
  }
}
