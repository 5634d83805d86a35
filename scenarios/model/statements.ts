// Intents: short statements a reviewer can read, each turned into cells with an intended verdict,
// judged like a hand-written matrix. One statement is a map with one verb and an arrow:
//
//   allow: shop/web -> shop/api:http        deny: "*" -> shop/db
//   except: [shop/api]                      deny: shop/* -> external:internet
//
// A side is a set: `*` (every pod and external), `ns/*` (every pod of a namespace), a pod
// (`ns/pod`, a name unique in the scenario, or its short label), a selector of labels in force at
// the step (`namespace=shop,app=web`: `namespace` is the namespace's name, every other key a pod
// label; `key` alone: the label is set), `external:<name>` or `external:*`. The destination may end
// in `:port`, `:port/PROTOCOL` or `:port-name` (a named container port of the destination pod).
// `except:` takes sets out of both sides. A statement that matches no cell is an error, never a
// pass. Pure: parsing, resolving sets against the pods, and the cells; the callers (assertions.ts,
// `scenario diff --approve`) say where a statement came from.
import type { Protocol } from '../../shared/netpol/types.ts';
import { PodNames } from './matrix.ts';
import type { Cell, PodSpec } from './resolve.ts';
import { nearestText } from './nearest.ts';

export type StatementVerdict = 'allow' | 'deny';

/** One side of a statement as written. */
export type SetRef =
  | { kind: 'all' }
  | { kind: 'namespace'; namespace: string }
  | { kind: 'pod'; name: string }
  | { kind: 'selector'; namespace?: string; labels: Record<string, string | null> }
  | { kind: 'external'; name: string | '*' };

export type PortRef = { kind: 'number'; port: number; protocol?: Protocol } | { kind: 'name'; name: string };

export interface Statement {
  verdict: StatementVerdict;
  from: SetRef;
  to: SetRef;
  port?: PortRef;
  except: SetRef[];
  /** The statement as a reviewer reads it: `deny: * -> shop/db except shop/api`. */
  text: string;
}

/** What a statement is resolved against: the step's pods (with the labels in force), externals and cells. */
export interface StatementWorld {
  pods: readonly PodSpec[];
  /** Labels in force per pod id (a step's); a pod absent here has its declared labels. */
  podLabels?: Readonly<Record<string, Record<string, string>>>;
  /** External names (cells name them `external:<name>`). */
  externals?: readonly string[];
  cells: readonly Cell[];
}

export interface StatementCell {
  key: string;
  cell: Cell;
  /** true: allow, false: deny. */
  intended: boolean;
}

export class StatementError extends Error {}

const EXTERNAL = 'external:';
const PORT = /^(?:(\d{1,5})(?:\/(tcp|udp|sctp))?|([a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?))$/i;
const SELECTOR_PART = /^([A-Za-z0-9._/-]{1,253})(?:=([A-Za-z0-9._-]{0,63}))?$/;

/** Reads one side (`shop/*`, `app=web`, `external:internet`, …); throws StatementError. */
export function parseSet(text: string): SetRef {
  const t = text.trim();
  if (t === '') throw new StatementError('an empty set (write *, ns/*, a pod, a selector such as app=web, or external:<name>)');
  if (t === '*') return { kind: 'all' };
  if (t.startsWith(EXTERNAL)) {
    const name = t.slice(EXTERNAL.length);
    if (name !== '*' && !/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/.test(name))
      throw new StatementError(`"${t}": an external's name is lowercase letters, digits, dots and dashes`);
    return { kind: 'external', name };
  }
  if (t.includes('=')) {
    const labels: Record<string, string | null> = {};
    let namespace: string | undefined;
    for (const part of t.split(',')) {
      const m = SELECTOR_PART.exec(part.trim());
      if (!m) throw new StatementError(`"${t}": "${part.trim()}" is not key=value or key`);
      if (m[1] === 'namespace') {
        if (m[2] === undefined || m[2] === '') throw new StatementError(`"${t}": namespace needs a name (namespace=shop)`);
        namespace = m[2];
      } else labels[m[1]!] = m[2] ?? null;
    }
    return { kind: 'selector', ...(namespace !== undefined ? { namespace } : {}), labels };
  }
  const ns = /^([a-z0-9-]+)\/\*$/.exec(t);
  if (ns) return { kind: 'namespace', namespace: ns[1]! };
  if (/^([a-z0-9-]+\/)?[A-Za-z0-9_.-]+$/.test(t) || /^[A-Za-z0-9_/.-]{1,12}$/.test(t)) return { kind: 'pod', name: t };
  throw new StatementError(`"${t}" is not a set (write *, ns/*, a pod, a selector such as app=web, or external:<name>)`);
}

export function setText(s: SetRef): string {
  switch (s.kind) {
    case 'all':
      return '*';
    case 'namespace':
      return `${s.namespace}/*`;
    case 'pod':
      return s.name;
    case 'external':
      return `${EXTERNAL}${s.name}`;
    case 'selector':
      return [
        ...(s.namespace !== undefined ? [`namespace=${s.namespace}`] : []),
        ...Object.entries(s.labels).map(([k, v]) => (v === null ? k : `${k}=${v}`)),
      ].join(',');
  }
}

const portText = (p: PortRef) => (p.kind === 'name' ? p.name : `${p.port}${p.protocol ? `/${p.protocol}` : ''}`);

/** The arrow part: `SRC -> DST[:PORT]`. */
function parseArrow(text: string): { from: SetRef; to: SetRef; port?: PortRef } {
  const parts = text.split('->');
  if (parts.length !== 2) throw new StatementError(`"${text}": write SOURCE -> DESTINATION[:port] (one arrow)`);
  const from = parseSet(parts[0]!);
  let dst = parts[1]!.trim();
  let port: PortRef | undefined;
  // A colon after the external prefix (or anywhere in a selector key) is no port: only the last
  // colon's tail, when it reads as a port, is one.
  const colon = dst.lastIndexOf(':');
  if (colon > 0 && !(dst.startsWith(EXTERNAL) && colon === EXTERNAL.length - 1)) {
    const tail = dst.slice(colon + 1);
    const m = PORT.exec(tail);
    if (!m) throw new StatementError(`"${text}": ":${tail}" is not a port (write :80, :53/UDP or a port name such as :http)`);
    if (m[1]) {
      const n = Number(m[1]);
      if (n < 1 || n > 65535) throw new StatementError(`"${text}": port ${n} is outside 1-65535`);
      port = { kind: 'number', port: n, ...(m[2] ? { protocol: m[2].toUpperCase() as Protocol } : {}) };
    } else port = { kind: 'name', name: m[3]! };
    dst = dst.slice(0, colon);
  }
  return { from, to: parseSet(dst), ...(port ? { port } : {}) };
}

/**
 * Reads one statement: `{allow: "A -> B[:port]"}` or `{deny: …}`, with an optional `except: [sets]`.
 * `where` starts every message (a file and line, a JSON pointer).
 */
export function parseStatement(doc: unknown, where: string): Statement {
  const fail = (m: string): never => {
    throw new StatementError(`${where}: ${m}`);
  };
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    return fail('a statement is a map such as {allow: "shop/web -> shop/api:http"} or {deny: "* -> shop/db", except: [shop/api]}');
  const map = doc as Record<string, unknown>;
  const verbs = (['allow', 'deny'] as const).filter((v) => v in map);
  if (verbs.length !== 1) return fail(verbs.length === 0 ? 'give allow: or deny:' : 'give allow: or deny:, not both');
  const other = Object.keys(map).filter((k) => k !== verbs[0] && k !== 'except');
  if (other.length > 0) return fail(`unknown field ${JSON.stringify(other[0])} (a statement has allow: or deny:, and except:)`);
  const verdict = verbs[0]!;
  const arrow = map[verdict];
  if (typeof arrow !== 'string') return fail(`${verdict}: must be a string such as "shop/web -> shop/api:http"`);
  const rawExcept = map.except === undefined ? [] : map.except;
  if (!Array.isArray(rawExcept) || rawExcept.some((e) => typeof e !== 'string')) return fail('except: must be a list of sets such as [shop/api]');
  try {
    const parsed = parseArrow(arrow);
    const except = (rawExcept as string[]).map(parseSet);
    const text = `${verdict}: ${setText(parsed.from)} -> ${setText(parsed.to)}${parsed.port ? `:${portText(parsed.port)}` : ''}${except.length ? ` except ${except.map(setText).join(', ')}` : ''}`;
    return { verdict, ...parsed, except, text };
  } catch (err) {
    if (err instanceof StatementError) return fail(err.message);
    throw err;
  }
}

/** The endpoint ids (`ns/pod`, `external:<name>`) a set stands for; throws StatementError naming an unknown pod or external. */
export function resolveSet(ref: SetRef, world: StatementWorld, names: PodNames = new PodNames(world.pods)): Set<string> {
  const externals = world.externals ?? [];
  const labelsOf = (p: PodSpec) => world.podLabels?.[p.id] ?? p.labels;
  switch (ref.kind) {
    case 'all':
      return new Set([...world.pods.map((p) => p.id), ...externals.map((e) => `${EXTERNAL}${e}`)]);
    case 'namespace': {
      const found = world.pods.filter((p) => p.namespace === ref.namespace).map((p) => p.id);
      if (found.length === 0) {
        const spaces = [...new Set(world.pods.map((p) => p.namespace))];
        throw new StatementError(`"${ref.namespace}/*": no pod in namespace "${ref.namespace}"${nearestText(ref.namespace, spaces)}`);
      }
      return new Set(found);
    }
    case 'pod': {
      const id = names.resolve(ref.name);
      if (!id) throw new StatementError(names.unknown(ref.name));
      return new Set([id]);
    }
    case 'selector':
      return new Set(
        world.pods
          .filter(
            (p) =>
              (ref.namespace === undefined || p.namespace === ref.namespace) &&
              Object.entries(ref.labels).every(([k, v]) => (v === null ? k in labelsOf(p) : labelsOf(p)[k] === v)),
          )
          .map((p) => p.id),
      );
    case 'external':
      if (ref.name === '*') return new Set(externals.map((e) => `${EXTERNAL}${e}`));
      if (!externals.includes(ref.name))
        throw new StatementError(
          `unknown external "${ref.name}" (${externals.length ? `known: ${externals.join(', ')}` : 'this scenario declares no externals'})`,
        );
      return new Set([`${EXTERNAL}${ref.name}`]);
  }
}

/**
 * The cells a statement judges, each with its intended verdict. Throws StatementError when a set
 * names an unknown pod or external, or when the statement matches no cell (an intent that checks
 * nothing is an error, not a pass).
 */
export function statementCells(st: Statement, world: StatementWorld): StatementCell[] {
  const names = new PodNames(world.pods);
  const excluded = new Set(st.except.flatMap((e) => [...resolveSet(e, world, names)]));
  const from = [...resolveSet(st.from, world, names)].filter((id) => !excluded.has(id));
  const to = [...resolveSet(st.to, world, names)].filter((id) => !excluded.has(id));
  const fromSet = new Set(from);
  const toSet = new Set(to);
  const byId = new Map(world.pods.map((p) => [p.id, p]));
  const portOk = (c: Cell) => {
    const p = st.port;
    if (!p) return true;
    if (p.kind === 'number') return c.port === p.port && (p.protocol === undefined || c.protocol === p.protocol);
    return byId.get(c.to)?.ports.some((np) => np.name === p.name && np.port === c.port && np.protocol === c.protocol) ?? false;
  };
  const out = world.cells
    .filter((c) => fromSet.has(c.from) && toSet.has(c.to) && portOk(c))
    .map((cell) => ({ key: cell.key, cell, intended: st.verdict === 'allow' }));
  if (out.length === 0) {
    const side = (ids: string[], ref: SetRef) =>
      ids.length === 0 ? `${setText(ref)} is empty${st.except.length ? ' (after except)' : ''}` : `${setText(ref)} is ${ids.length} endpoint(s)`;
    throw new StatementError(
      `"${st.text}" matches no cell (${side(from, st.from)}, ${side(to, st.to)}${st.port ? `, none of their cells is on port ${portText(st.port)}` : ''}): an intent that checks nothing is not a pass`,
    );
  }
  return out;
}

/** Builds a statement from parts (for `scenario diff --approve`): the text is made as parseStatement makes it. */
export function statementOf(verdict: StatementVerdict, from: string, to: string, except: string[] = []): Statement {
  return parseStatement({ [verdict]: `${from} -> ${to}`, ...(except.length ? { except } : {}) }, 'statement');
}
