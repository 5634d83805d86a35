// The cluster side of the extension endpoints (registered by policyPlugin):
//   GET    /v2/starmap/namespaces                  → 200 {namespaces: [{name, labels}]} (stored and implied by tasks)
//   GET    /v2/starmap/namespaces/{name}           → 200 {name, labels} | 404
//   PUT    /v2/starmap/namespaces/{name}           → 201 created | 200 replaced; body {labels}; kubernetes.io/metadata.name always set
//   DELETE /v2/starmap/namespaces/{name}           → 200 {name, deleted: true} | 404 (only stored labels go; tasks keep running)
//   GET    /v2/starmap/pods                        → 200 {pods: [{namespace, pod, labels, replaced, ports, tasks}]}
//   GET    /v2/starmap/pods/{namespace}/{pod}/labels → 200 {namespace, pod, labels, replaced} | 404
//   PUT    /v2/starmap/pods/{namespace}/{pod}/labels → 201 | 200; body {labels}: replaces the labels policies see, at once, no restart
//   DELETE /v2/starmap/pods/{namespace}/{pod}/labels → 200 {namespace, pod, deleted: true} | 404: back to the app's labels
//   POST   /v2/starmap/changes                     → 200 {applied, unchanged, failed, appliedAt, notFound}: one atomic change
//                                                    (validated whole first, stored in one transaction, enforced in one sync)
// A write is refused whole (4xx/503, nothing stored) or stored. Stored but not enforced in every
// task namespace (an `nft -f` failed): 202 {message, stored: true, enforcement: {applied,
// unchanged, failed: [{taskId, error}]}} (POST /v2/starmap/changes: its usual body with message
// and stored added), never an error that would say nothing was changed. The next change or task
// start or stop applies the failed namespaces' rules again.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { objectId } from '../../shared/netpol/types.ts';
import { dns1123LabelErrors } from '../../shared/netpol/names.ts';
import type { FieldErrors } from '../../shared/netpol/validate.ts';
import { podIdErrors, validateChanges, validateLabelsBody } from './changes.ts';
import { namespaceLabels } from './cluster.ts';
import { TooMuchState, type PolicyEngine, type SyncResult } from './policy-engine.ts';
import type { StateWrite } from './policy-store.ts';
import { BadRequest, InvalidObject, NotFound, Unavailable } from '../errors.ts';

export const NAMESPACES_PATH = '/v2/starmap/namespaces';
export const PODS_PATH = '/v2/starmap/pods';
export const CHANGES_PATH = '/v2/starmap/changes';

export function enforcement(reply: FastifyReply, s: SyncResult | undefined): void {
  if (s) void reply.header('Starmap-Enforcement', `applied=${s.applied.length} unchanged=${s.unchanged.length} failed=${s.failed.length}`);
}

/** The message of a stored write whose rules some task namespaces do not have. */
function notEnforcedMessage(s: SyncResult): string {
  const total = s.applied.length + s.unchanged.length + s.failed.length;
  return `The change was stored, but the rules of ${s.failed.length} of ${total} tasks could not be applied; the next change or task start or stop tries again`;
}

/**
 * Answers a stored write: `code` with `body` when every task has its rules, else 202 with the
 * enforcement state (see the top of this file). `extra` is what POST /v2/starmap/changes keeps.
 */
export function storedReply(reply: FastifyReply, s: SyncResult | undefined, code: number, body: unknown): FastifyReply {
  enforcement(reply, s);
  if (!s || s.failed.length === 0) return reply.code(code).send(body);
  return reply.code(202).send({
    message: notEnforcedMessage(s),
    stored: true,
    enforcement: { applied: s.applied.length, unchanged: s.unchanged.length, failed: s.failed },
  });
}

/** The body, or the error for a request without one (null and '' count as none). */
export function requireBody(body: unknown): unknown {
  if (body === undefined || body === null || body === '') throw new BadRequest('Please specify data in JSON format', { details: 'Request body is empty' });
  return body;
}

/** The value of a validation, or its violations thrown (422 Object is not valid). */
export function validated<T>(v: { value: T } | { errors: FieldErrors[] }): T {
  if ('errors' in v) throw new InvalidObject(v.errors);
  return v.value;
}

/**
 * Runs a state change (PolicyEngine.apply and what calls it, which throw only before storing): a
 * bound it would exceed is refused (InvalidObject), a database that cannot take the write is
 * Unavailable (nothing was changed then).
 */
export async function stored<T>(change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof TooMuchState) throw new InvalidObject([{ path: err.path, errors: [err.message] }]);
    throw new Unavailable(`the change could not be stored, nothing was changed: ${(err as Error).message}`);
  }
}

const write = (w: Partial<StateWrite>): StateWrite => ({ putPolicies: [], deletePolicies: [], namespaces: [], podLabels: [], ...w });

export async function clusterRoutes(app: FastifyInstance, engine: PolicyEngine): Promise<void> {
  /** PUT of a label map (a namespace's or a pod's): validated, stored, enforced. */
  const setLabels = async (reply: FastifyReply, body: unknown, kind: 'namespaces' | 'podLabels', key: string, keyErrors: FieldErrors, had: boolean) => {
    if (keyErrors.errors.length) throw new InvalidObject([keyErrors]);
    const labels = validated(validateLabelsBody(requireBody(body)));
    const r = await stored(() => engine.apply(write({ [kind]: [[key, labels]] })));
    return { created: !had, labels, sync: r.sync };
  };
  /** DELETE of a label map: NotFound when there is none. */
  const unsetLabels = async (kind: 'namespaces' | 'podLabels', key: string, had: boolean, missing: string) => {
    if (!had) throw new NotFound(missing);
    return stored(() => engine.apply(write({ [kind]: [[key, null]] })));
  };

  type NsParams = { Params: { name: string } };
  app.get(NAMESPACES_PATH, async () => ({ namespaces: engine.namespaces() }));

  app.get<NsParams>(`${NAMESPACES_PATH}/:name`, async (req) => {
    const ns = engine.namespaces().find((n) => n.name === req.params.name);
    if (!ns) throw new NotFound(`Namespace '${req.params.name}' does not exist`);
    return ns;
  });

  app.put<NsParams>(`${NAMESPACES_PATH}/:name`, async (req, reply) => {
    const { name } = req.params;
    const r = await setLabels(
      reply,
      req.body,
      'namespaces',
      name,
      { path: '/name', errors: dns1123LabelErrors(name) },
      engine.storedNamespace(name) !== undefined,
    );
    return storedReply(reply, r.sync, r.created ? 201 : 200, { name, labels: namespaceLabels(name, r.labels) });
  });

  app.delete<NsParams>(`${NAMESPACES_PATH}/:name`, async (req, reply) => {
    const { name } = req.params;
    const r = await unsetLabels('namespaces', name, engine.storedNamespace(name) !== undefined, `Namespace '${name}' has no labels of its own`);
    return storedReply(reply, r.sync, 200, { name, deleted: true });
  });

  app.get(PODS_PATH, async () => {
    const byId = new Map<
      string,
      { namespace: string; pod: string; labels: Record<string, string>; replaced: boolean; ports: unknown[]; tasks: { taskId: string; ip: string }[] }
    >();
    for (const p of engine.pods()) {
      const id = objectId({ namespace: p.namespace, name: p.pod });
      const entry = byId.get(id) ?? {
        namespace: p.namespace,
        pod: p.pod,
        labels: p.labels,
        replaced: engine.podLabels(id) !== undefined,
        ports: p.ports,
        tasks: [],
      };
      entry.tasks.push({ taskId: p.taskId, ip: p.ip });
      byId.set(id, entry);
    }
    return { pods: [...byId.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, e]) => e) };
  });

  type PodParams = { Params: { namespace: string; pod: string } };
  const labelsPath = `${PODS_PATH}/:namespace/:pod/labels`;
  const podId = (p: { namespace: string; pod: string }) => `${p.namespace}/${p.pod}`;

  app.get<PodParams>(labelsPath, async (req) => {
    const id = podId(req.params);
    const replaced = engine.podLabels(id);
    if (replaced) return { namespace: req.params.namespace, pod: req.params.pod, labels: replaced, replaced: true };
    const pod = engine.pods().find((p) => p.namespace === req.params.namespace && p.pod === req.params.pod);
    if (!pod) throw new NotFound(`Pod '${id}' does not exist`);
    return { namespace: pod.namespace, pod: pod.pod, labels: pod.labels, replaced: false };
  });

  app.put<PodParams>(labelsPath, async (req, reply) => {
    const id = podId(req.params);
    const r = await setLabels(reply, req.body, 'podLabels', id, { path: '/pod', errors: podIdErrors(id) }, engine.podLabels(id) !== undefined);
    const tasks = engine
      .pods()
      .filter((p) => podId({ namespace: p.namespace, pod: p.pod }) === id)
      .map((p) => p.taskId);
    return storedReply(reply, r.sync, r.created ? 201 : 200, { namespace: req.params.namespace, pod: req.params.pod, labels: r.labels, tasks });
  });

  app.delete<PodParams>(labelsPath, async (req, reply) => {
    const id = podId(req.params);
    const r = await unsetLabels('podLabels', id, engine.podLabels(id) !== undefined, `Pod '${id}' has no replaced labels`);
    return storedReply(reply, r.sync, 200, { namespace: req.params.namespace, pod: req.params.pod, deleted: true });
  });

  app.post(CHANGES_PATH, async (req, reply) => {
    const change = validated(validateChanges(requireBody(req.body)));
    const r = await stored(() => engine.apply(change));
    enforcement(reply, r.sync);
    const body = {
      applied: r.sync.applied.length,
      unchanged: r.sync.unchanged.length,
      failed: r.sync.failed,
      appliedAt: new Date().toISOString(),
      notFound: r.notFound,
    };
    if (r.sync.failed.length === 0) return body;
    return reply.code(202).send({ message: notEnforcedMessage(r.sync), stored: true, ...body });
  });
}
