// Network policy model and evaluation, with no I/O: validation of policy documents, the rules each
// task's namespace gets, and their nftables rendering.
//
// Two models, both enforced on ingress (what a task accepts):
// 1. Marathon `ipAddress.groups` as network groups: a task with groups accepts traffic only from
//    tasks that share at least one group with it. A task without groups is not restricted by groups.
// 2. Policies with Kubernetes NetworkPolicy ingress semantics: a policy selects tasks by their
//    app's labels; a selected task accepts only what some rule of some policy selecting it allows
//    (policies are additive; a selected task with no matching rule is default-deny); tasks that no
//    policy selects are open. A rule allows from peers (tasks selected by labels and/or network
//    group; no `from` = from anywhere) on ports (no `ports` = every port and protocol).
// When both apply, a packet must pass both (groups restrict the sources every rule allows).
// Always accepted: loopback, replies of connections the task opened (conntrack established, reply
// direction; related ICMP errors)
// and the host (the gateway address), which plays the node's part like kubelet probes in
// Kubernetes: health checks and the orchestrator reach every task.

export type Protocol = 'tcp' | 'udp';

export interface PeerSelector {
  /** Tasks whose app labels include all of these (an empty object selects every task). */
  labels?: Record<string, string>;
  /** Tasks in this network group (ipAddress.groups). */
  group?: string;
}

export interface PortRule {
  port: number;
  /** Last port of a range (inclusive), like Kubernetes' endPort. */
  endPort?: number;
  protocol: Protocol;
}

export interface IngressRule {
  /** Absent or empty: from anywhere. */
  from?: PeerSelector[];
  /** Absent or empty: every port and protocol. */
  ports?: PortRule[];
}

export interface NetworkPolicy {
  id: string;
  /** Selects the tasks the policy applies to by their app's labels (empty: every task). */
  selector: { labels: Record<string, string> };
  ingress: IngressRule[];
}

/** What the orchestrator knows about a running (or starting) isolated task. */
export interface TaskNetInfo {
  taskId: string;
  appId: string;
  /** The app's labels (Marathon `labels`). */
  labels: Record<string, string>;
  /** ipAddress.groups */
  groups: string[];
  /** The task's address (from TaskNetwork.attachTask). */
  ip: string;
  /** The task's namespace (from TaskNetwork.attachTask). */
  netns: string;
  /** Names other tasks can use for it (written into every task's /etc/hosts). */
  hostnames?: string[];
}

export interface ValidationError {
  path: string;
  errors: string[];
}

// ---------------------------------------------------------------------------------------------
// Validation

export const POLICY_ID_PATTERN = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;
const LABEL_KEY = /^[A-Za-z0-9._/-]{1,253}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Checks a policy document and returns it normalised (`matchLabels` accepted as an alias of
 * `labels`, protocol defaulting to tcp), or every problem with its JSON path.
 */
export function validatePolicy(body: unknown, idFromPath?: string): { policy: NetworkPolicy } | { errors: ValidationError[] } {
  const errors: ValidationError[] = [];
  /** Records a problem; returns undefined so that `return err(…)` also says "no value". */
  const err = (path: string, msg: string): undefined => {
    const e = errors.find((x) => x.path === path);
    if (e) e.errors.push(msg);
    else errors.push({ path, errors: [msg] });
    return undefined;
  };
  if (!isObject(body)) return { errors: [{ path: '/', errors: ['must be a JSON object'] }] };
  const known = (o: Record<string, unknown>, path: string, keys: string[]) => {
    for (const k of Object.keys(o)) if (!keys.includes(k)) err(`${path}/${k}`, `unknown property (expected one of ${keys.join(', ')})`);
  };
  known(body, '', ['id', 'selector', 'ingress']);

  let id = idFromPath;
  if (body.id !== undefined) {
    if (typeof body.id !== 'string') err('/id', 'must be a string');
    else if (idFromPath !== undefined && body.id !== idFromPath) err('/id', `does not match the id in the path (${idFromPath})`);
    else id = body.id;
  }
  if (id === undefined) err('/id', 'is required');
  else if (!POLICY_ID_PATTERN.test(id)) err('/id', 'must be 1-128 letters, digits, dots, dashes or underscores, starting and ending with a letter or digit');

  const labels = (v: unknown, path: string): Record<string, string> => {
    if (!isObject(v)) {
      err(path, 'must be an object of label names to values');
      return {};
    }
    const out: Record<string, string> = {};
    for (const [k, val] of Object.entries(v)) {
      if (!LABEL_KEY.test(k)) err(`${path}/${k}`, 'invalid label name');
      if (typeof val !== 'string') err(`${path}/${k}`, 'label value must be a string');
      else out[k] = val;
    }
    return out;
  };
  const selectorLabels = (o: Record<string, unknown>, path: string): Record<string, string> | undefined => {
    if (o.labels !== undefined && o.matchLabels !== undefined) err(path, 'give labels or matchLabels, not both');
    if (o.labels !== undefined) return labels(o.labels, `${path}/labels`);
    if (o.matchLabels !== undefined) return labels(o.matchLabels, `${path}/matchLabels`);
    return undefined;
  };

  let selector: NetworkPolicy['selector'] = { labels: {} };
  if (body.selector === undefined) err('/selector', 'is required (use {} to select every task)');
  else if (!isObject(body.selector)) err('/selector', 'must be an object');
  else {
    known(body.selector, '/selector', ['labels', 'matchLabels']);
    selector = { labels: selectorLabels(body.selector, '/selector') ?? {} };
  }

  /**
   * An array of objects at `path`: each element must be an object (else `shape` is the error) with
   * only `keys`; `each` turns it into a value (undefined: skipped). Undefined when not an array.
   */
  const objects = <T>(v: unknown, path: string, shape: string, keys: string[], each: (o: Record<string, unknown>, path: string) => T | undefined): T[] | undefined => {
    if (!Array.isArray(v)) return err(path, 'must be an array');
    const out: T[] = [];
    v.forEach((x: unknown, i) => {
      const xp = `${path}/${i}`;
      if (!isObject(x)) return err(xp, shape);
      known(x, xp, keys);
      const value = each(x, xp);
      if (value !== undefined) out.push(value);
    });
    return out;
  };

  let ingress: IngressRule[] = [];
  if (body.ingress === undefined) err('/ingress', 'is required ([] denies all ingress to the selected tasks)');
  else {
    ingress =
      objects(body.ingress, '/ingress', 'must be an object', ['from', 'ports'], (r, p): IngressRule => {
        const rule: IngressRule = {};
        if (r.from !== undefined) {
          const from = objects(r.from, `${p}/from`, 'must be an object with labels and/or group', ['labels', 'matchLabels', 'group'], (f, fp): PeerSelector => {
            const peer: PeerSelector = {};
            const l = selectorLabels(f, fp);
            if (l) peer.labels = l;
            if (f.group !== undefined) {
              if (typeof f.group !== 'string' || f.group === '') err(`${fp}/group`, 'must be a non-empty string');
              else peer.group = f.group;
            }
            if (peer.labels === undefined && peer.group === undefined) err(fp, 'must have labels and/or group (use {"labels": {}} for every task)');
            return peer;
          });
          if (from) rule.from = from;
        }
        if (r.ports !== undefined) {
          const ports = objects(r.ports, `${p}/ports`, 'must be an object {port, protocol}', ['port', 'endPort', 'protocol'], (x, xp): PortRule | undefined => {
            const port = x.port;
            if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) return err(`${xp}/port`, 'must be an integer from 1 to 65535');
            const proto = x.protocol === undefined ? 'tcp' : typeof x.protocol === 'string' ? x.protocol.toLowerCase() : x.protocol;
            if (proto !== 'tcp' && proto !== 'udp') return err(`${xp}/protocol`, 'must be "tcp" or "udp"');
            const pr: PortRule = { port, protocol: proto };
            if (x.endPort !== undefined) {
              if (typeof x.endPort !== 'number' || !Number.isInteger(x.endPort) || x.endPort < port || x.endPort > 65535) return err(`${xp}/endPort`, 'must be an integer from port to 65535');
              pr.endPort = x.endPort;
            }
            return pr;
          });
          if (ports) rule.ports = ports;
        }
        return rule;
      }) ?? [];
  }
  if (errors.length > 0) return { errors };
  return { policy: { id: id!, selector, ingress } };
}

// ---------------------------------------------------------------------------------------------
// Evaluation

function labelsMatch(want: Record<string, string>, have: Record<string, string>): boolean {
  return Object.entries(want ?? {}).every(([k, v]) => have[k] === v);
}

function peerMatches(peer: PeerSelector, t: TaskNetInfo): boolean {
  if (peer.labels && !labelsMatch(peer.labels, t.labels)) return false;
  if (peer.group !== undefined && !t.groups.includes(peer.group)) return false;
  return true;
}

export function selects(p: NetworkPolicy, t: TaskNetInfo): boolean {
  return labelsMatch(p.selector.labels, t.labels);
}

/** Sources: 'any' or a set of task addresses. */
export type Sources = 'any' | Set<string>;

export interface AllowRule {
  sources: Sources;
  /** undefined: every port and protocol. */
  ports?: PortRule[];
  /** Where the rule comes from (for comments in the ruleset and for explaining). */
  origin: string;
}

export interface TaskRules {
  taskId: string;
  netns: string;
  gateway: string;
  /** false: nothing restricts this task (input policy accept). */
  restricted: boolean;
  allow: AllowRule[];
}

/** The ingress rules of every task, given all tasks (with addresses) and all policies. */
export function computeRules(tasks: TaskNetInfo[], policies: NetworkPolicy[], gateway: string): TaskRules[] {
  return tasks.map((t) => {
    // Sources allowed by network groups ('any' when the task has no groups).
    let groupSources: Sources = 'any';
    if (t.groups.length > 0) {
      groupSources = new Set(tasks.filter((o) => o.taskId !== t.taskId && o.groups.some((g) => t.groups.includes(g))).map((o) => o.ip));
    }
    const intersect = (s: Sources): Sources => {
      if (groupSources === 'any') return s;
      if (s === 'any') return groupSources;
      const g = groupSources;
      return new Set([...s].filter((ip) => g.has(ip)));
    };
    const selecting = policies.filter((p) => selects(p, t));
    const allow: AllowRule[] = [];
    if (selecting.length === 0) {
      if (groupSources !== 'any') allow.push({ sources: groupSources, origin: `groups ${t.groups.join(',')}` });
    } else {
      for (const p of selecting) {
        p.ingress.forEach((r, i) => {
          const sources: Sources = !r.from || r.from.length === 0 ? 'any' : new Set(tasks.filter((o) => o.taskId !== t.taskId && r.from!.some((peer) => peerMatches(peer, o))).map((o) => o.ip));
          const rule: AllowRule = { sources: intersect(sources), origin: `policy ${p.id} ingress ${i}` };
          if (r.ports && r.ports.length > 0) rule.ports = r.ports;
          allow.push(rule);
        });
      }
    }
    const restricted = selecting.length > 0 || groupSources !== 'any';
    return { taskId: t.taskId, netns: t.netns, gateway, restricted, allow };
  });
}

/** Is a connection from `srcIp` to `port`/`protocol` accepted by these rules? (The model, for tests and explaining.) */
export function allows(rules: TaskRules, srcIp: string, port: number, protocol: Protocol): boolean {
  if (!rules.restricted || srcIp === rules.gateway) return true;
  return rules.allow.some((r) => (r.sources === 'any' || r.sources.has(srcIp)) && (!r.ports || r.ports.some((p) => p.protocol === protocol && port >= p.port && port <= (p.endPort ?? p.port))));
}

// ---------------------------------------------------------------------------------------------
// Rendering

export const TASK_TABLE = 'starmap';

function comment(s: string): string {
  return `comment "${s.replace(/[^A-Za-z0-9 ._,:/=-]/g, '_').slice(0, 120)}"`;
}

/**
 * The task namespace's ruleset, replacing the previous one in one transaction (`nft -f -`): the
 * table is declared, deleted and defined again, so there is never a moment without rules.
 */
export function renderRuleset(r: TaskRules): string {
  const lines = [`table inet ${TASK_TABLE}`, `delete table inet ${TASK_TABLE}`, `table inet ${TASK_TABLE} {`, '  chain input {'];
  lines.push(`    type filter hook input priority 0; policy ${r.restricted ? 'drop' : 'accept'};`);
  if (r.restricted) {
    lines.push('    iif "lo" accept');
    // Replies to connections the task opened pass; packets of connections opened TO the task are
    // checked against the rules on every packet, so a change also cuts connections already open.
    lines.push('    ct state established ct direction reply accept');
    lines.push('    ct state related accept');
    lines.push(`    ip saddr ${r.gateway} accept ${comment('the host = the node: orchestrator and health checks')}`);
    for (const a of r.allow) {
      let src = '';
      if (a.sources !== 'any') {
        if (a.sources.size === 0) continue;
        src = `ip saddr { ${[...a.sources].sort().join(', ')} } `;
      }
      if (!a.ports) {
        lines.push(`    ${src}accept ${comment(a.origin)}`);
        continue;
      }
      for (const proto of ['tcp', 'udp'] as const) {
        const ps = a.ports.filter((p) => p.protocol === proto).map((p) => (p.endPort !== undefined && p.endPort !== p.port ? `${p.port}-${p.endPort}` : String(p.port)));
        if (ps.length) lines.push(`    ${src}${proto} dport { ${ps.join(', ')} } accept ${comment(a.origin)}`);
      }
    }
  }
  lines.push('  }', '}', '');
  return lines.join('\n');
}
