// The dialect: Starmap's own small policy documents (ingress only), their validation, and the
// model's answers the tests and explanations use. Both the dialect and Kubernetes NetworkPolicy
// compile into one rule model (compile.ts), rendered for nftables by render.ts.
//
// Two dialect models, both enforced on ingress (what a task accepts):
// 1. Marathon `ipAddress.groups` as network groups: a task with groups accepts traffic only from
//    tasks that share at least one group with it. A task without groups is not restricted by groups.
// 2. Policies with Kubernetes NetworkPolicy ingress semantics: a policy selects tasks by their
//    app's labels; a selected task accepts only what some rule of some policy selecting it allows
//    (policies are additive; a selected task with no matching rule is default-deny); tasks that no
//    policy selects are open. A rule allows from peers (tasks selected by labels and/or network
//    group; no `from` = from anywhere) on ports (no `ports` = every port and protocol).
// When both apply, a packet must pass both. Dialect policies and NetworkPolicies add up: a task
// selected by either kind accepts what a rule of any of them allows.
import type { NamedPort, Protocol as K8sProtocol } from '../../shared/netpol/types.ts';
import { namespacesOf, podOf } from './cluster.ts';
import { compileRules, sideAllows, type TaskRules } from './compile.ts';

export { renderRuleset, TASK_TABLE } from './render.ts';
export type { TaskRules } from './compile.ts';

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
  /** Its named ports (the app's ipAddress.discovery.ports), for NetworkPolicy ports by name. */
  ports?: NamedPort[];
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
  const objects = <T>(
    v: unknown,
    path: string,
    shape: string,
    keys: string[],
    each: (o: Record<string, unknown>, path: string) => T | undefined,
  ): T[] | undefined => {
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
              if (typeof x.endPort !== 'number' || !Number.isInteger(x.endPort) || x.endPort < port || x.endPort > 65535)
                return err(`${xp}/endPort`, 'must be an integer from port to 65535');
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
// The model's answers (for tests and explanations; enforcement renders the same compiled rules)

/** The rules of every task under dialect policies only (no NetworkPolicies, no label overrides). */
export function computeRules(tasks: TaskNetInfo[], policies: NetworkPolicy[], gateway: string): TaskRules[] {
  const pods = tasks.map((t) => podOf(t, new Map()));
  return compileRules({ pods, namespaces: namespacesOf(new Map(), pods), dialect: policies, policies: [], gateway });
}

/** Is a connection from `srcIp` to `port`/`protocol` accepted by these rules' ingress side? The host always is. */
export function allows(rules: TaskRules, srcIp: string, port: number, protocol: Protocol): boolean {
  return srcIp === rules.gateway || sideAllows(rules.ingress, srcIp, port, protocol.toUpperCase() as K8sProtocol);
}
