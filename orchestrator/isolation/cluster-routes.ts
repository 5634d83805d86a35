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
import type { FastifyInstance, FastifyReply } from 'fastify';
import { objectId } from '../../shared/netpol/types.ts';
import { dns1123LabelErrors, type FieldErrors } from '../../shared/netpol/validate.ts';
import { podIdErrors, validateChanges, validateLabelsBody } from './changes.ts';
import { namespaceLabels } from './cluster.ts';
import { TooMuchState, type PolicyEngine, type SyncResult } from './policy-engine.ts';
import type { StateWrite } from './policy-store.ts';

export const NAMESPACES_PATH = '/v2/starmap/namespaces';
export const PODS_PATH = '/v2/starmap/pods';
export const CHANGES_PATH = '/v2/starmap/changes';

export function enforcement(reply: FastifyReply, s: SyncResult | undefined): void {
  if (s) void reply.header('Starmap-Enforcement', `applied=${s.applied.length} unchanged=${s.unchanged.length} failed=${s.failed.length}`);
}

export function invalid(reply: FastifyReply, details: FieldErrors[]): FastifyReply {
  return reply.code(422).send({ message: 'Object is not valid', details });
}

export function isBodyMissing(body: unknown): boolean {
  return body === undefined || body === null || body === '';
}

export function missingBody(reply: FastifyReply): FastifyReply {
  return reply.code(400).send({ message: 'Please specify data in JSON format', details: 'Request body is empty' });
}

/**
 * Runs a state change; a bound it would exceed is a 422, a database that cannot take the write a
 * 503 (nothing was changed then). Undefined when the reply has been sent.
 */
export async function stored<T>(reply: FastifyReply, change: () => Promise<T>): Promise<T | undefined> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof TooMuchState) invalid(reply, [{ path: err.path, errors: [err.message] }]);
    else reply.code(503).send({ message: `the change could not be stored, nothing was changed: ${(err as Error).message}` });
    return undefined;
  }
}

const write = (w: Partial<StateWrite>): StateWrite => ({ putPolicies: [], deletePolicies: [], namespaces: [], podLabels: [], ...w });

export async function clusterRoutes(app: FastifyInstance, engine: PolicyEngine): Promise<void> {
  /** PUT of a label map (a namespace's or a pod's): validated, stored, enforced; undefined once an error is sent. */
  const setLabels = async (reply: FastifyReply, body: unknown, kind: 'namespaces' | 'podLabels', key: string, keyErrors: FieldErrors, had: boolean) => {
    if (keyErrors.errors.length) return void invalid(reply, [keyErrors]);
    if (isBodyMissing(body)) return void missingBody(reply);
    const v = validateLabelsBody(body);
    if ('errors' in v) return void invalid(reply, v.errors);
    const r = await stored(reply, () => engine.apply(write({ [kind]: [[key, v.value]] })));
    if (!r) return undefined;
    enforcement(reply, r.sync);
    return { created: !had, labels: v.value };
  };
  /** DELETE of a label map: 404 when there is none; undefined once an error is sent. */
  const unsetLabels = async (reply: FastifyReply, kind: 'namespaces' | 'podLabels', key: string, had: boolean, missing: string) => {
    if (!had) return void reply.code(404).send({ message: missing });
    const r = await stored(reply, () => engine.apply(write({ [kind]: [[key, null]] })));
    if (r) enforcement(reply, r.sync);
    return r;
  };

  type NsParams = { Params: { name: string } };
  app.get(NAMESPACES_PATH, async () => ({ namespaces: engine.namespaces() }));

  app.get<NsParams>(`${NAMESPACES_PATH}/:name`, async (req, reply) => engine.namespaces().find((n) => n.name === req.params.name) ?? reply.code(404).send({ message: `Namespace '${req.params.name}' does not exist` }));

  app.put<NsParams>(`${NAMESPACES_PATH}/:name`, async (req, reply) => {
    const { name } = req.params;
    const r = await setLabels(reply, req.body, 'namespaces', name, { path: '/name', errors: dns1123LabelErrors(name) }, engine.storedNamespace(name) !== undefined);
    return r && reply.code(r.created ? 201 : 200).send({ name, labels: namespaceLabels(name, r.labels) });
  });

  app.delete<NsParams>(`${NAMESPACES_PATH}/:name`, async (req, reply) => {
    const { name } = req.params;
    const r = await unsetLabels(reply, 'namespaces', name, engine.storedNamespace(name) !== undefined, `Namespace '${name}' has no labels of its own`);
    return r && { name, deleted: true };
  });

  app.get(PODS_PATH, async () => {
    const byId = new Map<string, { namespace: string; pod: string; labels: Record<string, string>; replaced: boolean; ports: unknown[]; tasks: { taskId: string; ip: string }[] }>();
    for (const p of engine.pods()) {
      const id = objectId({ namespace: p.namespace, name: p.pod });
      const entry = byId.get(id) ?? { namespace: p.namespace, pod: p.pod, labels: p.labels, replaced: engine.podLabels(id) !== undefined, ports: p.ports, tasks: [] };
      entry.tasks.push({ taskId: p.taskId, ip: p.ip });
      byId.set(id, entry);
    }
    return { pods: [...byId.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, e]) => e) };
  });

  type PodParams = { Params: { namespace: string; pod: string } };
  const labelsPath = `${PODS_PATH}/:namespace/:pod/labels`;
  const podId = (p: { namespace: string; pod: string }) => `${p.namespace}/${p.pod}`;

  app.get<PodParams>(labelsPath, async (req, reply) => {
    const id = podId(req.params);
    const replaced = engine.podLabels(id);
    if (replaced) return { namespace: req.params.namespace, pod: req.params.pod, labels: replaced, replaced: true };
    const pod = engine.pods().find((p) => p.namespace === req.params.namespace && p.pod === req.params.pod);
    return pod ? { namespace: pod.namespace, pod: pod.pod, labels: pod.labels, replaced: false } : reply.code(404).send({ message: `Pod '${id}' does not exist` });
  });

  app.put<PodParams>(labelsPath, async (req, reply) => {
    const id = podId(req.params);
    const r = await setLabels(reply, req.body, 'podLabels', id, { path: '/pod', errors: podIdErrors(id) }, engine.podLabels(id) !== undefined);
    if (!r) return reply;
    const tasks = engine.pods().filter((p) => podId({ namespace: p.namespace, pod: p.pod }) === id).map((p) => p.taskId);
    return reply.code(r.created ? 201 : 200).send({ namespace: req.params.namespace, pod: req.params.pod, labels: r.labels, tasks });
  });

  app.delete<PodParams>(labelsPath, async (req, reply) => {
    const id = podId(req.params);
    const r = await unsetLabels(reply, 'podLabels', id, engine.podLabels(id) !== undefined, `Pod '${id}' has no replaced labels`);
    return r && { namespace: req.params.namespace, pod: req.params.pod, deleted: true };
  });

  app.post(CHANGES_PATH, async (req, reply) => {
    if (isBodyMissing(req.body)) return missingBody(reply);
    const v = validateChanges(req.body);
    if ('errors' in v) return invalid(reply, v.errors);
    const r = await stored(reply, () => engine.apply(v.value));
    if (!r) return reply;
    enforcement(reply, r.sync);
    return { applied: r.sync.applied.length, unchanged: r.sync.unchanged.length, failed: r.sync.failed, appliedAt: new Date().toISOString(), notFound: r.notFound };
  });
}
