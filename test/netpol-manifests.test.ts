// Reading NetworkPolicy manifests: the forms users keep them in, and clear refusals naming the
// file, the document, the kind or the field and its line.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkPolicy, loadManifests, ManifestError } from '../shared/netpol/manifests.ts';
import { ROOT } from './helpers/process.ts';

const deny = (ns: string, name = 'deny') => `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: ${name}, namespace: ${ns} }
spec: { podSelector: {} }
`;

describe('loading manifests', () => {
  it('reads single and multi-document YAML, skipping empty documents', () => {
    expect(loadManifests(deny('x'), 'a.yaml').map((p) => p.policy.metadata)).toEqual([{ name: 'deny', namespace: 'x' }]);
    const multi = loadManifests(`${deny('x')}---\n${deny('y')}---\n`, 'b.yaml');
    expect(multi.map((p) => `${p.policy.metadata.namespace}/${p.policy.metadata.name}`)).toEqual(['x/deny', 'y/deny']);
    expect(multi[1]!.origin).toBe('b.yaml document 2 (line 6)');
  });

  it('applies the API server defaults (namespace, policyTypes, protocol)', () => {
    const [p] = loadManifests(
      '{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"j"},"spec":{"podSelector":{},"egress":[{"ports":[{"port":53}]}]}}',
      'j.json',
    );
    expect(p!.policy.metadata.namespace).toBe('default');
    expect(p!.policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(p!.policy.spec.egress![0]!.ports![0]!.protocol).toBe('TCP');
  });

  it('reads a List as kubectl get netpol -A -o yaml prints it (server fields and all)', () => {
    const list = `apiVersion: v1
kind: List
items:
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    generation: 1
    name: allow-ui
    namespace: stars
    resourceVersion: "123"
    uid: 0b3c2a3e-0000-0000-0000-000000000000
  spec:
    ingress:
    - from:
      - namespaceSelector:
          matchLabels: { role: management-ui }
    podSelector: {}
    policyTypes: [Ingress]
metadata:
  resourceVersion: ""
`;
    expect(loadManifests(list, 'l.yaml').map((p) => p.policy.metadata)).toEqual([{ name: 'allow-ui', namespace: 'stars' }]);
    expect(
      loadManifests(list.replace('kind: List', 'kind: NetworkPolicyList').replace('apiVersion: v1', 'apiVersion: networking.k8s.io/v1'), 'l.yaml'),
    ).toHaveLength(1);
  });

  it("reads the Calico stars demo's own policy files", () => {
    for (const f of [
      'policy-1-default-deny.yaml',
      'policy-2-allow-ui.yaml',
      'policy-3-allow-ui-client.yaml',
      'policy-4-backend-policy.yaml',
      'policy-5-frontend-policy.yaml',
    ]) {
      expect(loadManifests(readFileSync(join(ROOT, 'deploy', 'kubernetes', f), 'utf8'), f).length).toBeGreaterThan(0);
    }
  });

  it('refuses anything that is not a NetworkPolicy with the file, the document index and the kind', () => {
    const text = `${deny('x')}---\napiVersion: apps/v1\nkind: Deployment\nmetadata: { name: d }\n`;
    expect(() => loadManifests(text, 'mixed.yaml')).toThrow(ManifestError);
    expect(() => loadManifests(text, 'mixed.yaml')).toThrow(
      /^mixed\.yaml: document 2 \(line 6\): kind "Deployment" \(apiVersion "apps\/v1"\) is not a NetworkPolicy/,
    );
    expect(() => loadManifests('apiVersion: v1\nkind: List\nitems:\n- { apiVersion: v1, kind: Namespace, metadata: { name: n } }\n', 'l.yaml')).toThrow(
      /^l\.yaml: document 1 \(line 1\) \/items\/0: kind "Namespace"/,
    );
    expect(() => loadManifests('- 1\n- 2\n', 'arr.yaml')).toThrow(/arr\.yaml: document 1 \(line 1\): not a Kubernetes object/);
    expect(() => loadManifests('apiVersion: networking.k8s.io/v1beta1\nkind: NetworkPolicy\n', 'old.yaml')).toThrow(/apiVersion "networking.k8s.io\/v1beta1"/);
  });

  it('names the document, the field and its line for an invalid policy', () => {
    const bad = `${deny('x')}---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: { name: bad, namespace: x }
spec:
  podSelector:
    matchExpressions:
      - { key: pod, operator: Like, values: [a] }
  ingress:
    - from:
        - ipBlock: { cidr: 10.0.0.0/40 }
`;
    let message = '';
    try {
      loadManifests(bad, 'bad.yaml');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(
      'bad.yaml: \n  document 2 (line 6): /spec/podSelector/matchExpressions/0/operator (line 12): Invalid value: "Like": not a valid selector operator',
    );
    expect(message).toMatch(/document 2 \(line 6\): \/spec\/ingress\/0\/from\/0\/ipBlock\/cidr \(line 15\): /);
  });

  it('reports YAML syntax errors per document', () => {
    expect(() => loadManifests('a: [\n', 's.yaml')).toThrow(/^s\.yaml: document 1 .*not valid YAML/);
  });
});

describe('address templates in manifests', () => {
  const tpl = (cidr: string, except?: string[]) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 't', namespace: 'x' },
    spec: { podSelector: {}, egress: [{ to: [{ ipBlock: { cidr, ...(except ? { except } : {}) } }] }] },
  });

  it('are accepted with templates on, kept as written, and refused without', () => {
    const r = checkPolicy(tpl('{{ip x/b}}/32'), { templates: true });
    expect('policy' in r && r.policy.spec.egress![0]!.to![0]!.ipBlock!.cidr).toBe('{{ip x/b}}/32');
    expect('errors' in checkPolicy(tpl('{{ip x/b}}/32'))).toBe(true);
  });

  it('an except template may lie inside a literal or a templated cidr; a wider except is still refused', () => {
    expect('policy' in checkPolicy(tpl('10.0.0.0/8', ['{{ip x/b}}/32']), { templates: true })).toBe(true);
    expect('policy' in checkPolicy(tpl('{{ip x/b}}/4', ['{{ip x/b}}/32', '10.0.0.0/16']), { templates: true })).toBe(true);
    const wide = checkPolicy(tpl('10.0.0.0/16', ['{{ip x/b}}/8']), { templates: true });
    expect('errors' in wide && wide.errors[0]).toMatchObject({ path: '/spec/egress/0/to/0/ipBlock/except/0' });
  });

  it('a template must be the whole address followed by a prefix length', () => {
    const r = checkPolicy(tpl('{{ip x/b}}'), { templates: true });
    expect('errors' in r && r.errors).toEqual([
      { path: '/spec/egress/0/to/0/ipBlock/cidr', errors: [expect.stringContaining('write an address template as {{ip namespace/pod}}/<prefix length>')] },
    ]);
  });
});
