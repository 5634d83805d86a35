// The Kubernetes e2e network-policy suite's own way of stating an expectation, re-implemented so
// that the truth tables of scenarios/builtin/k8s-e2e/ can be checked against the upstream code they
// were derived from. Each expectation in those files is preceded by the Go statements of the
// upstream test, verbatim (for example `reachability.ExpectPeer(&Peer{}, &Peer{Namespace: nsX}, false)`
// then `ValidateOrFail(k8s, &TestCase{ToPort: 80, Protocol: v1.ProtocolTCP, Reachability: reachability})`);
// this module replays those statements with the semantics of reachability.go and truthtable.go
// (kubernetes/kubernetes test/e2e/network/netpol) and returns the table they build.
//
// This knows nothing about NetworkPolicy: it is the "intended" side, written by the upstream
// authors, not computed from the policies (that is the evaluator's job, which it judges).

export interface UpstreamTable {
  port: number;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  /** from pod → to pod → connected, over every pod of the model (loopback included, as upstream). */
  expected: Map<string, Map<string, boolean>>;
}

/** nsX, nsY, nsZ as returned by getK8sNamespaces(k8s) are the model's first three namespaces. */
const NAMESPACE_VARS = ['nsX', 'nsY', 'nsZ'];

const Q = '(?:netpol\\.)?'; // the 3 x 3 era's callers sometimes qualify the helpers with the package
const POD = `${Q}NewPodString\\((\\w+), "([^"]+)"\\)`;
const PEER = `&${Q}Peer\\{([^}]*)\\}`;
const PATTERNS = {
  reachability: new RegExp(`^(\\w+) :?= ${Q}NewReachability\\(k8s\\.AllPodStrings\\(\\), (true|false)\\)$`),
  peer: new RegExp(`^(\\w+)\\.ExpectPeer\\(${PEER}, ${PEER}, (true|false)\\)$`),
  single: new RegExp(`^(\\w+)\\.Expect\\(${POD}, ${POD}, (true|false)\\)$`),
  all: new RegExp(`^(\\w+)\\.ExpectAll(Ingress|Egress)\\(${POD}, (true|false)\\)$`),
  validate: new RegExp(`^${Q}ValidateOrFail\\(k8s, &${Q}TestCase\\{ToPort: (\\d+), Protocol: v1\\.Protocol(TCP|UDP|SCTP), Reachability: (\\w+)\\}\\)$`),
};

/** A statement that names the reachability API but matches no pattern is a transcription error. */
const LOOKS_LIKE_CODE = /Expect|Reachability\(|ValidateOrFail/;

export class TranscriptionError extends Error {}

/**
 * Replays upstream statements over the pods `ns/pod` of the model (namespaces in the order
 * nsX, nsY, nsZ) and returns one table per ValidateOrFail call, in order. Lines that are not code
 * (prose comments) are skipped.
 */
export function replay(lines: string[], namespaces: string[], pods: string[]): UpstreamTable[] {
  const all = namespaces.flatMap((ns) => pods.map((p) => `${ns}/${p}`));
  const ns = (v: string): string => {
    const i = NAMESPACE_VARS.indexOf(v);
    if (i < 0 || i >= namespaces.length) throw new TranscriptionError(`unknown namespace variable ${v}`);
    return namespaces[i]!;
  };
  const pod = (nsVar: string, name: string): string => {
    const id = `${ns(nsVar)}/${name}`;
    if (!all.includes(id)) throw new TranscriptionError(`pod ${id} is not in the model`);
    return id;
  };
  const peer = (fields: string): ((p: string) => boolean) => {
    let namespace: string | undefined;
    let name: string | undefined;
    for (const f of fields
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)) {
      const m = /^(Namespace|Pod): (?:(\w+)|"([^"]*)")$/.exec(f);
      if (!m) throw new TranscriptionError(`cannot read Peer field "${f}"`);
      if (m[1] === 'Namespace') namespace = m[2] ? ns(m[2]) : m[3];
      else name = m[3] ?? m[2];
    }
    // Peer.Matches: an empty field matches everything.
    return (p) => (namespace === undefined || p.split('/')[0] === namespace) && (name === undefined || p.split('/')[1] === name);
  };
  const tables = new Map<string, Map<string, Map<string, boolean>>>();
  const table = (v: string) => {
    const t = tables.get(v);
    if (!t) throw new TranscriptionError(`${v} is used before NewReachability`);
    return t;
  };
  const out: UpstreamTable[] = [];
  for (const raw of lines) {
    const line = raw.trim();
    let m: RegExpExecArray | null;
    if (line.startsWith('//') || line.startsWith('ginkgo.By(')) continue; // Go comments and step titles
    if ((m = PATTERNS.reachability.exec(line))) {
      const value = m[2] === 'true';
      tables.set(m[1]!, new Map(all.map((f) => [f, new Map(all.map((t) => [t, value]))])));
    } else if ((m = PATTERNS.peer.exec(line))) {
      const t = table(m[1]!);
      const from = peer(m[2]!);
      const to = peer(m[3]!);
      for (const f of all) for (const d of all) if (from(f) && to(d)) t.get(f)!.set(d, m[4] === 'true');
    } else if ((m = PATTERNS.single.exec(line))) {
      table(m[1]!)
        .get(pod(m[2]!, m[3]!))!
        .set(pod(m[4]!, m[5]!), m[6] === 'true');
    } else if ((m = PATTERNS.all.exec(line))) {
      const t = table(m[1]!);
      const target = pod(m[3]!, m[4]!);
      const value = m[5] === 'true';
      // ExpectAllIngress = TruthTable.SetAllTo (a column); ExpectAllEgress = SetAllFrom (a row).
      if (m[2] === 'Ingress') for (const f of all) t.get(f)!.set(target, value);
      else for (const d of all) t.get(target)!.set(d, value);
    } else if ((m = PATTERNS.validate.exec(line))) {
      const t = table(m[3]!);
      out.push({
        port: Number(m[1]),
        protocol: m[2] as UpstreamTable['protocol'],
        expected: new Map([...t].map(([f, row]) => [f, new Map(row)])),
      });
    } else if (LOOKS_LIKE_CODE.test(line)) {
      throw new TranscriptionError(`not a reachability statement this replay knows: ${line}`);
    }
  }
  return out;
}

/**
 * The matrix text a scenario file holds for a table: a header of destinations, one row per source,
 * '.' connected, 'X' blocked, '-' for a pod to itself (upstream ignores loopback: ignoreLoopback).
 */
export function renderMatrix(expected: Map<string, Map<string, boolean>>): string {
  const pods = [...expected.keys()];
  const width = Math.max(...pods.map((p) => p.length)) + 2;
  const cell = (s: string) => s.padEnd(width);
  const lines = [['-', ...pods].map(cell).join('').trimEnd()];
  for (const from of pods) {
    lines.push([from, ...pods.map((to) => (from === to ? '-' : expected.get(from)!.get(to) ? '.' : 'X'))].map(cell).join('').trimEnd());
  }
  return lines.join('\n') + '\n';
}
