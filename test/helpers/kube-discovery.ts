// A Kubernetes API server's discovery documents, and nothing else, on loopback: what `kubectl
// apply --dry-run=client` asks a server before it prints what it would create. It maps each kind
// to its resource through /api and /apis, then GETs each object to see whether it exists; every
// object answers 404, so kubectl reports each one as "created (dry run)". With `--kubeconfig=/dev/null
// --server=<url>` a test's kubectl reaches only this server, never a cluster a kubeconfig names.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Resource {
  name: string;
  kind: string;
  namespaced: boolean;
}

const VERBS = ['create', 'get', 'list', 'patch', 'delete'];
/** groupVersion → its resources: the kinds `scenario export` writes, and the CRD kind of the admin tiers. */
const RESOURCES: Record<string, Resource[]> = {
  v1: [
    { name: 'namespaces', kind: 'Namespace', namespaced: false },
    { name: 'pods', kind: 'Pod', namespaced: true },
    { name: 'services', kind: 'Service', namespaced: true },
    { name: 'configmaps', kind: 'ConfigMap', namespaced: true },
  ],
  'apps/v1': [{ name: 'deployments', kind: 'Deployment', namespaced: true }],
  'networking.k8s.io/v1': [{ name: 'networkpolicies', kind: 'NetworkPolicy', namespaced: true }],
  'policy.networking.k8s.io/v1alpha2': [{ name: 'clusternetworkpolicies', kind: 'ClusterNetworkPolicy', namespaced: false }],
};

function resourceList(groupVersion: string): object {
  const resources = RESOURCES[groupVersion]!.map((r) => ({ ...r, singularName: r.kind.toLowerCase(), verbs: VERBS }));
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}

export interface KubeDiscovery {
  url: string;
  /** The paths of every object kubectl looked up (one per object it would apply). */
  objectLookups: string[];
  close(): Promise<void>;
}

export async function startKubeDiscovery(): Promise<KubeDiscovery> {
  const objectLookups: string[] = [];
  const groups = Object.keys(RESOURCES)
    .filter((gv) => gv.includes('/'))
    .map((gv) => {
      const version = gv.split('/')[1]!;
      return { name: gv.split('/')[0]!, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
    });
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (code: number, body: object): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (path === '/version') return send(200, { major: '1', minor: '35', gitVersion: 'v1.35.0' });
    if (path === '/api') return send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (path === '/api/v1') return send(200, resourceList('v1'));
    if (path === '/apis') return send(200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
    const gv = path.slice('/apis/'.length);
    if (path.startsWith('/apis/') && RESOURCES[gv]) return send(200, resourceList(gv));
    if (req.method === 'GET') objectLookups.push(path);
    send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: `${path} not found` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    objectLookups,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
