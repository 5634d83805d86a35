// `scenario run FILE --kubernetes`: the scenario's export on the user's cluster, all through kubectl
// command lines (the user's kubeconfig and context; no client library of our own for a server we
// cannot test here). Writes the export to a temporary directory, then:
//   kubectl apply -f DIR                      namespaces, pods, collectors, the observer
//   kubectl label namespace default …         labels the scenario gives namespaces that exist
//   kubectl wait … deployment / pod           until everything is available and ready
//   kubectl get pods -o json                  the pods' addresses, for {{ip ns/pod}} policies
//   kubectl port-forward … starmap-observer   where observe reads
//   per step: kubectl apply -f DIR/step-N/ (and its policies with addresses filled in), kubectl
//   delete of the previous step's policies it does not list, then observe until settled or the
//   step's timeout (kubernetes-observe.ts)
//   kubectl delete … -l starmap.scenario=NAME on exit or Ctrl-C (every object it made has the
//   label, so nothing else is touched), unless --keep
// test/scenarios/run/kubernetes-run.test.ts compares these command lines with a recording fake
// kubectl: nothing here has run against a real cluster (docs/kubernetes.md).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { substitute } from '../../shared/netpol/ip-template.ts';
import type { ResolvedScenario } from '../model/resolve.ts';
import { stepText, type Observation, type ScenarioReportDoc } from '../report/results.ts';
import { LEGEND } from '../report/truth-table.ts';
import { writeExport } from './kubernetes-files.ts';
import { exportScenario, OBSERVER, OBSERVER_PORT, POD_LABEL, SCENARIO_LABEL } from './kubernetes-manifests.ts';
import { EVIDENCE_NOTICE, observeStep, readCollector } from './kubernetes-observe.ts';
import { emptyReport, preflight, scenarioOutcome, settleBudgetMs } from './steps.ts';

export interface KubernetesRunOptions {
  scenario: ResolvedScenario;
  /** The kubectl program (--kubectl, $KUBECTL, else kubectl on PATH). */
  kubectl: string;
  image?: string;
  /** Where the export is written (a fresh temporary directory). */
  workDir: string;
  stepTimeoutSeconds?: number;
  /** Seconds to wait for the pods to be ready. */
  readySeconds?: number;
  keep?: boolean;
  log: (line: string) => void;
  progress?: (line: string) => void;
  signal?: AbortSignal;
}

export class KubectlError extends Error {}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs kubectl to its end; killed when `signal` aborts (then code null). */
function kubectl(program: string, args: string[], signal?: AbortSignal): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const onAbort = () => child.kill('SIGTERM');
    signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (err) => resolve({ code: 127, stdout, stderr: `${stderr}${err.message}` }));
    child.once('close', (code) => {
      signal?.removeEventListener('abort', onAbort);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `kubectl port-forward` to the observer: resolves with the local URL once kubectl says where it listens. */
function portForward(program: string, args: string[], timeoutMs: number): Promise<{ url: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const stop = () => child.kill('SIGTERM');
    const timer = setTimeout(
      () => (stop(), reject(new KubectlError(`kubectl ${args.join(' ')}: no "Forwarding from" within ${timeoutMs / 1000} s: ${out.trim()}`))),
      timeoutMs,
    );
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: `http://127.0.0.1:${m[1]}`, stop });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => (clearTimeout(timer), reject(new KubectlError(`${program}: ${err.message}`))));
    child.once('exit', (code) => (clearTimeout(timer), reject(new KubectlError(`kubectl ${args.join(' ')} ended (${code}): ${out.trim()}`))));
  });
}

const kv = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => `${k}=${v}`);

/** The pods' addresses (`ns/pod` → IP) from `kubectl get pods -o json`. Pure. */
export function podAddresses(json: string): Map<string, string> {
  const doc = JSON.parse(json) as { items?: { metadata?: { namespace?: string; labels?: Record<string, string> }; status?: { podIP?: string } }[] };
  const out = new Map<string, string>();
  for (const p of doc.items ?? []) {
    const name = p.metadata?.labels?.[POD_LABEL];
    if (name && name !== OBSERVER && p.metadata?.namespace && p.status?.podIP) out.set(`${p.metadata.namespace}/${name}`, p.status.podIP);
  }
  return out;
}

export async function runKubernetes(o: KubernetesRunOptions): Promise<ScenarioReportDoc> {
  const s = o.scenario;
  const refused = preflight(s, true, true, o.log);
  if (refused) return refused;
  const ex = exportScenario(s, o.image ? { image: o.image } : {});
  for (const n of ex.notes) o.log(`note: ${n}`);
  writeExport(ex, o.workDir);
  const report = emptyReport(s, true, true);
  report.notices.push(EVIDENCE_NOTICE, ...ex.notes);
  const selector = `${SCENARIO_LABEL}=${ex.label}`;
  const run = async (args: string[], what: string, tolerate = false): Promise<Result> => {
    o.log(`$ kubectl ${args.join(' ')}`);
    const r = await kubectl(o.kubectl, args, o.signal);
    if (r.code !== 0 && !tolerate && !o.signal?.aborted)
      throw new KubectlError(`${what}: kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr.trim().slice(0, 500)}`);
    if (r.code !== 0 && tolerate) o.log(`  (exit ${r.code}: ${r.stderr.trim().split('\n')[0] ?? ''})`);
    return r;
  };
  let forward: { url: string; stop: () => void } | undefined;
  try {
    await run(['apply', '-f', o.workDir], 'deploying');
    for (const n of ex.systemLabels) await run(['label', 'namespace', n.namespace, '--overwrite', ...kv(n.labels)], 'labelling');
    const ready = `--timeout=${o.readySeconds ?? 180}s`;
    // The observer (and any collector of the model) is a Deployment: its pod exists only once it is scheduled.
    await run(['wait', '--for=condition=Available', 'deployment', '-A', '-l', selector, ready], 'waiting for the collectors');
    await run(['wait', '--for=condition=Ready', 'pod', '-A', '-l', selector, ready], 'waiting for the pods');
    const ips = podAddresses((await run(['get', 'pods', '-A', '-l', selector, '-o', 'json'], 'reading the pod addresses')).stdout);
    for (const r of report.pods) r.ip = ips.get(r.id) ?? null;
    if (o.signal?.aborted) throw new Error('interrupted');
    const pf = ['port-forward', '-n', ex.observerNamespace, `service/${OBSERVER}`, `:${OBSERVER_PORT}`];
    o.log(`$ kubectl ${pf.join(' ')}`);
    forward = await portForward(o.kubectl, pf, 30_000);
    o.log(`observer: ${forward.url}`);
    o.log(LEGEND);
    let previous: ReadonlyMap<string, Observation> | undefined;
    for (const [i, st] of ex.steps.entries()) {
      if (o.signal?.aborted) break;
      const step = s.steps[i]!;
      o.log(`\napplying step ${i + 1}/${s.steps.length} ${step.name}${step.description ? `: ${step.description}` : ''}`);
      const writeAt = Date.now();
      await run(['apply', '-f', join(o.workDir, st.dir)], `step ${step.name}`);
      if (st.templated) {
        const tmpl = ex.files.find((f) => f.path === `${st.dir}/needs-addresses.yaml.tmpl`)!;
        const text = substitute(tmpl.content, (ref) => ips.get(ref));
        if (text === undefined) throw new KubectlError(`step ${step.name}: a policy names a pod whose address kubectl did not report`);
        const file = join(o.workDir, st.dir, 'addressed.yaml');
        writeFileSync(file, text);
        await run(['apply', '-f', file], `step ${step.name}`);
      }
      const before = ex.steps[i - 1];
      if (before) {
        const keepNp = new Set(st.networkPolicies.map((p) => `${p.namespace}/${p.name}`));
        for (const p of before.networkPolicies.filter((x) => !keepNp.has(`${x.namespace}/${x.name}`)))
          await run(['delete', 'networkpolicy', '-n', p.namespace, p.name, '--ignore-not-found'], `step ${step.name}`);
        for (const name of before.clusterPolicies.filter((x) => !st.clusterPolicies.includes(x)))
          await run(['delete', 'clusternetworkpolicy', name, '--ignore-not-found'], `step ${step.name}`);
      }
      const appliedAt = Date.now();
      const { result, settled, blockedWithoutControl } = await observeStep({
        scenario: s,
        stepIndex: i,
        read: () => readCollector(forward!.url, ex.plan),
        ips,
        since: appliedAt,
        deadlineMs: (step.timeoutSeconds ?? o.stepTimeoutSeconds ?? Math.max(10, (4 * settleBudgetMs(s)) / 1000)) * 1000,
        applyMs: appliedAt - writeAt,
        ...(previous ? { previous } : {}),
        ...(o.progress ? { progress: o.progress } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
      });
      if (o.signal?.aborted) break;
      previous = settled.observed;
      if (blockedWithoutControl.length > 0)
        report.notices.push(`step ${step.name}: blocked without a positive control (not evidence of the policy): ${blockedWithoutControl.join(', ')}`);
      report.steps.push(result);
      o.log(stepText(result, s.steps.length));
    }
    if (o.signal?.aborted) report.error = `stopped after ${report.steps.length} of ${s.steps.length} steps`;
  } catch (err) {
    report.error = o.signal?.aborted ? `stopped after ${report.steps.length} of ${s.steps.length} steps` : (err as Error).message;
    if (!o.signal?.aborted) o.log(`error: ${report.error}`);
  } finally {
    forward?.stop();
    if (!o.keep) {
      o.log('\nremoving what it made:');
      // Not killed by an abort: the cleanup runs after Ctrl-C.
      const clean = async (args: string[]) => {
        o.log(`$ kubectl ${args.join(' ')}`);
        const r = await kubectl(o.kubectl, args);
        if (r.code !== 0) o.log(`  cleanup: exit ${r.code}: ${r.stderr.trim().split('\n')[0] ?? ''}`);
      };
      await clean(['delete', 'pod,deployment,service,configmap,networkpolicy', '-A', '-l', selector, '--ignore-not-found', '--wait=false']);
      if (s.steps.some((st) => (st.clusterPolicies ?? []).length > 0)) await clean(['delete', 'clusternetworkpolicy', '-l', selector, '--ignore-not-found']);
      for (const n of ex.systemLabels) await clean(['label', 'namespace', n.namespace, ...Object.keys(n.labels).map((k) => `${k}-`)]);
      await clean(['delete', 'namespace', '-l', selector, '--ignore-not-found', '--wait=false']);
    }
  }
  report.outcome = report.error && !o.signal?.aborted ? 'fail' : scenarioOutcome(report);
  if (o.signal?.aborted && report.outcome !== 'fail') report.outcome = 'not run';
  report.passed = report.outcome === 'pass';
  report.failure = report.error && !o.signal?.aborted ? 'error' : (report.steps.find((st) => st.failure)?.failure ?? null);
  report.finishedAt = new Date().toISOString();
  return report;
}
