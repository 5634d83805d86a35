// The app reader (orchestrator/state/app-definition.ts) on its own: Marathon's normalised form
// (defaults, key order) and its exact error shapes. Type errors are 400 `Invalid JSON`, semantic
// ones 422 `Object is not valid`, each with {path, errors} details; the messages are Marathon's
// and part of the contract, so every case here states its answer in full.
import { describe, expect, it } from 'vitest';
import { OrchestratorError } from '../../../orchestrator/errors.ts';
import { answerFor } from '../../../orchestrator/http/errors.ts';
import { appPortNames, bridgedMappings, canonicalPath, idErrors, parseApp, readApp, type AppDefinition } from '../../../orchestrator/state/app-definition.ts';

const NOW = '2024-05-01T10:00:00.000Z';

/** What `{id: '/a', cmd: 'x'}` becomes, in Marathon's key order (AppDefWrites). */
const PLAIN: Record<string, unknown> = {
  id: '/a',
  cmd: 'x',
  args: null,
  user: null,
  env: {},
  instances: 1,
  cpus: 1,
  mem: 128,
  disk: 0,
  gpus: 0,
  executor: '',
  constraints: [],
  uris: [],
  fetch: [],
  storeUrls: [],
  backoffSeconds: 1,
  backoffFactor: 1.15,
  maxLaunchDelaySeconds: 3600,
  container: null,
  healthChecks: [],
  readinessChecks: [],
  dependencies: [],
  upgradeStrategy: { minimumHealthCapacity: 1, maximumOverCapacity: 1 },
  labels: {},
  ipAddress: null,
  version: NOW,
  residency: null,
  secrets: {},
  taskKillGracePeriodSeconds: null,
  unreachableStrategy: { inactiveAfterSeconds: 0, expungeAfterSeconds: 0 },
  killSelection: 'YOUNGEST_FIRST',
  ports: [0],
  portDefinitions: [{ port: 0, protocol: 'tcp', name: 'default', labels: {} }],
  requirePorts: false,
};

type Answer = { app: Record<string, unknown> } | { status: number; body: { message: string; details: unknown } };

/** The outcome of reading `body`: the app, or the error as the API answers it (http/errors.ts). */
function outcome(body: unknown, opts: Record<string, unknown>): Answer {
  try {
    return { app: parseApp(body, { now: NOW, ...opts }) as unknown as Record<string, unknown> };
  } catch (err) {
    if (!(err instanceof OrchestratorError)) throw err;
    const { status, body } = answerFor(err);
    return { status, body: body as { message: string; details: unknown } };
  }
}

function expectedApp(diff: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...PLAIN, ...diff };
  for (const [k, v] of Object.entries(diff)) if (v === '<absent>') delete out[k];
  return out;
}

// Kubernetes' messages (apimachinery's, as shared/netpol/names.ts gives them) and the NUL refusal.
const DNS_LABEL =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS_SUBDOMAIN =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_NAME_PART =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const NUL = 'must not contain a NUL character (\\u0000): no process environment can carry one';

// [what, body, parse options, answer]
const CASES: [string, unknown, Record<string, unknown>, Answer][] = [
  ['a body that is not an object', [1], {}, { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/', errors: ['error.expected.jsobject'] }] } }],
  ['a missing id', { cmd: 'x' }, {}, { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/id', errors: ['error.path.missing'] }] } }],
  [
    'type errors (400), every one with its path',
    { id: '/a', cmd: 'x', instances: 1.5, cpus: 'abc', env: { A: 1 }, labels: { a: 1 }, args: 'x' },
    {},
    {
      status: 400,
      body: {
        message: 'Invalid JSON',
        details: [
          { path: '/args', errors: ['error.expected.jsarray'] },
          { path: '/env/A', errors: ['error.expected.jsstring'] },
          { path: '/instances', errors: ['error.expected.int'] },
          { path: '/cpus', errors: ['error.expected.jsnumber'] },
          { path: '/labels/a', errors: ['error.expected.jsstring'] },
        ],
      },
    },
  ],
  [
    'numbers and booleans given as strings are read',
    { id: '/a', cmd: 'x', instances: '2', cpus: '0.5', requirePorts: 'false', ports: [1000] },
    {},
    { app: { instances: 2, cpus: 0.5, ports: [1000], portDefinitions: [{ port: 1000, protocol: 'tcp', labels: {} }] } },
  ],
  [
    'neither cmd, args nor container',
    { id: '/a' },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [{ path: '/', errors: ["AppDefinition must either contain one of 'cmd' or 'args', and/or a 'container'."] }],
      },
    },
  ],
  [
    'both cmd and args',
    { id: '/a', cmd: 'x', args: ['y'] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [{ path: '/', errors: ["AppDefinition must either contain one of 'cmd' or 'args', and/or a 'container'."] }],
      },
    },
  ],
  [
    'bad id and out-of-range numbers',
    { id: '/A', cmd: '', instances: -1, cpus: -1, backoffFactor: 0.5, upgradeStrategy: { minimumHealthCapacity: 2 }, taskKillGracePeriodSeconds: -1 },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          {
            path: '/id',
            errors: [
              "must fully match regular expression '^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])|(\\.|\\.\\.)$'",
            ],
          },
          { path: '/cmd', errors: ['must not be empty'] },
          { path: '/instances', errors: ['got -1, expected 0 or more'] },
          { path: '/cpus', errors: ['got -1.0, expected 0.0 or more'] },
          { path: '/backoffFactor', errors: ['got 0.5, expected 1.0 or more'] },
          { path: '/taskKillGracePeriodSeconds', errors: ['got -1.0, expected 0.0 or more'] },
          { path: '/upgradeStrategy/minimumHealthCapacity', errors: ['got 2.0, expected between 0.0 and 1.0'] },
        ],
      },
    },
  ],
  [
    'port definitions: range, protocol, name, uniqueness',
    { id: '/a', cmd: 'x', portDefinitions: [{ port: 70000, protocol: 'sctp', name: 'Bad' }, { port: 70000 }, { port: 1, name: 'n' }, { port: 2, name: 'n' }] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/portDefinitions(0)/port', errors: ['got 70000, expected between 0 and 65535'] },
          { path: '/portDefinitions(0)/protocol', errors: ['is not one of (tcp, udp, udp,tcp)'] },
          { path: '/portDefinitions(0)/name', errors: ["must fully match regular expression '^[a-z0-9-]+$'"] },
          { path: '/portDefinitions(1)/port', errors: ['got 70000, expected between 0 and 65535'] },
          { path: '/portDefinitions', errors: ['Ports must be unique.', 'Port names must be unique.'] },
        ],
      },
    },
  ],
  [
    'requirePorts with port 0',
    { id: '/a', cmd: 'x', ports: [0, 0], requirePorts: true },
    {},
    { status: 422, body: { message: 'Object is not valid', details: [{ path: '/', errors: ['Ports must be non-zero when requirePorts is true.'] }] } },
  ],
  [
    'ipAddress with ports',
    { id: '/a', cmd: 'x', ipAddress: {}, ports: [1] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/', errors: ['You cannot specify both an IP address and ports'] }] } },
  ],
  [
    'uris with fetch',
    { id: '/a', cmd: 'x', uris: ['a'], fetch: [{ uri: 'b' }] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/', errors: ['You cannot specify both uris and fetch fields'] }] } },
  ],
  [
    'ports and different port definitions',
    { id: '/a', cmd: 'x', ports: [1], portDefinitions: [{ port: 2 }] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/', errors: ['You cannot specify both ports and port definitions'] }] } },
  ],
  [
    'ports and the same port definitions',
    { id: '/a', cmd: 'x', ports: [1], portDefinitions: [{ port: 1, name: 'p' }] },
    {},
    { app: { ports: [1], portDefinitions: [{ port: 1, protocol: 'tcp', name: 'p', labels: {} }] } },
  ],
  [
    'repeated ports',
    { id: '/a', cmd: 'x', ports: [5, 5] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/', errors: ['Ports must be unique.'] }] } },
  ],
  [
    'a fetch without uri',
    { id: '/a', cmd: 'x', fetch: [{ extract: false }] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/fetch(0)/uri', errors: ['error.path.missing'] }] } },
  ],
  [
    'fetch entries keep their fields',
    { id: '/a', cmd: 'x', fetch: [{ uri: 'http://127.0.0.1/f', executable: true, destPath: 'bin/f' }] },
    {},
    { app: { fetch: [{ uri: 'http://127.0.0.1/f', extract: true, executable: true, cache: false, destPath: 'bin/f' }] } },
  ],
  [
    'uris become fetch entries (archives extracted)',
    { id: '/a', cmd: 'x', uris: ['http://h/x.tgz', 'http://h/y'] },
    {},
    {
      app: {
        uris: ['http://h/x.tgz', 'http://h/y'],
        fetch: [
          { uri: 'http://h/x.tgz', extract: true, executable: false, cache: false },
          { uri: 'http://h/y', extract: false, executable: false, cache: false },
        ],
      },
    },
  ],
  [
    'a bridged docker container with a TCP health check and a readiness check',
    {
      id: '/a',
      container: { type: 'DOCKER', docker: { image: 'i', network: 'BRIDGE', portMappings: [{ containerPort: 80, name: 'web' }] } },
      healthChecks: [{ protocol: 'TCP' }],
      readinessChecks: [{ portName: 'web' }],
    },
    {},
    {
      app: {
        cmd: null,
        container: {
          type: 'DOCKER',
          volumes: [],
          docker: {
            image: 'i',
            network: 'BRIDGE',
            portMappings: [{ containerPort: 80, hostPort: 0, servicePort: 0, protocol: 'tcp', name: 'web', labels: {} }],
            privileged: false,
            parameters: [],
            forcePullImage: false,
          },
        },
        healthChecks: [{ protocol: 'TCP', gracePeriodSeconds: 15, intervalSeconds: 10, timeoutSeconds: 20, maxConsecutiveFailures: 3, portIndex: 0 }],
        readinessChecks: [
          {
            name: 'readinessCheck',
            protocol: 'HTTP',
            path: '/',
            portName: 'web',
            intervalSeconds: 30,
            timeoutSeconds: 10,
            httpStatusCodesForReady: [200],
            preserveLastResponse: false,
          },
        ],
        ports: [],
        portDefinitions: [],
      },
    },
  ],
  [
    'a container: type and volumes',
    { id: '/a', container: { type: 'X', volumes: [{ mode: 'Z' }] } },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/container/type', errors: ['is not one of (DOCKER, MESOS)'] },
          { path: '/container/volumes(0)/containerPath', errors: ['must not be empty'] },
          { path: '/container/volumes(0)/mode', errors: ['is not one of (RO, RW)'] },
        ],
      },
    },
  ],
  [
    'a docker container without image, bad network, port mapping out of range',
    { id: '/a', container: { type: 'DOCKER', docker: { network: 'WEIRD', portMappings: [{ containerPort: -1, protocol: 'x' }] } } },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/container/docker/image', errors: ['must not be empty'] },
          { path: '/container/docker/network', errors: ['is not one of (HOST, BRIDGE, USER, NONE)'] },
          { path: '/container/docker/portMappings(0)/containerPort', errors: ['got -1, expected between 0 and 65535'] },
          { path: '/container/docker/portMappings(0)/protocol', errors: ['is not one of (tcp, udp, udp,tcp)'] },
        ],
      },
    },
  ],
  [
    'a DOCKER container without docker',
    { id: '/a', container: { type: 'DOCKER' } },
    {},
    { status: 422, body: { message: 'Object is not valid', details: [{ path: '/container/docker', errors: ['not defined'] }] } },
  ],
  [
    'health checks: command, port index, Mesos count, protocol',
    { id: '/a', cmd: 'x', healthChecks: [{ protocol: 'COMMAND' }, { protocol: 'MESOS_TCP', portIndex: 3 }, { protocol: 'FOO' }] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/healthChecks(0)/command', errors: ['not defined'] },
          {
            path: '/',
            errors: [
              'Health check port indices must address an element of the ports array or container port mappings.',
              'AppDefinition can contain at most one Mesos health check',
            ],
          },
          { path: '/healthChecks(2)/protocol', errors: ['is not one of (HTTP, HTTPS, TCP, COMMAND, MESOS_HTTP, MESOS_HTTPS, MESOS_TCP)'] },
        ],
      },
    },
  ],
  [
    'health checks: defaults per protocol',
    {
      id: '/a',
      cmd: 'x',
      healthChecks: [
        { protocol: 'HTTP' },
        { protocol: 'Command', command: { value: 'true' } },
        { protocol: 'HTTPS', port: 8080, path: '/h', ignoreHttp1xx: true },
      ],
    },
    {},
    {
      app: {
        healthChecks: [
          {
            protocol: 'HTTP',
            gracePeriodSeconds: 15,
            intervalSeconds: 10,
            timeoutSeconds: 20,
            maxConsecutiveFailures: 3,
            path: '/',
            ignoreHttp1xx: false,
            portIndex: 0,
          },
          {
            protocol: 'COMMAND',
            gracePeriodSeconds: 15,
            intervalSeconds: 10,
            timeoutSeconds: 20,
            maxConsecutiveFailures: 3,
            command: { value: 'true' },
            delaySeconds: 15,
          },
          {
            protocol: 'HTTPS',
            gracePeriodSeconds: 15,
            intervalSeconds: 10,
            timeoutSeconds: 20,
            maxConsecutiveFailures: 3,
            path: '/h',
            port: 8080,
            ignoreHttp1xx: true,
          },
        ],
      },
    },
  ],
  [
    'health checks: negative numbers, port out of range',
    { id: '/a', cmd: 'x', healthChecks: [{ protocol: 'TCP', port: 70000, intervalSeconds: -1, maxConsecutiveFailures: -2 }] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/healthChecks(0)/intervalSeconds', errors: ['got -1, expected 0 or more'] },
          { path: '/healthChecks(0)/maxConsecutiveFailures', errors: ['got -2, expected 0 or more'] },
          { path: '/healthChecks(0)/port', errors: ['got 70000, expected between 0 and 65535'] },
        ],
      },
    },
  ],
  [
    'health checks: a non-numeric port index',
    { id: '/a', cmd: 'x', healthChecks: [{ protocol: 'TCP', portIndex: 'x' }] },
    {},
    { app: { healthChecks: [{ protocol: 'TCP', gracePeriodSeconds: 15, intervalSeconds: 10, timeoutSeconds: 20, maxConsecutiveFailures: 3, portIndex: 0 }] } },
  ],
  [
    'readiness checks: count, port name, interval, timeout, codes',
    { id: '/a', cmd: 'x', readinessChecks: [{ portName: 'nope', intervalSeconds: 0, httpStatusCodesForReady: [] }, {}] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/readinessChecks', errors: ['must have at most 1 element'] },
          { path: '/readinessChecks(0)/portName', errors: ['must name a port of the app (default)'] },
          { path: '/readinessChecks(0)/intervalSeconds', errors: ['got 0, expected more than 0'] },
          { path: '/readinessChecks(0)/timeoutSeconds', errors: ['must be more than 0 and less than intervalSeconds'] },
          { path: '/readinessChecks(0)/httpStatusCodesForReady', errors: ['must be a non-empty list of HTTP status codes'] },
          { path: '/readinessChecks(1)/portName', errors: ['must name a port of the app (default)'] },
        ],
      },
    },
  ],
  [
    'readiness checks: protocol and codes of the wrong type',
    { id: '/a', cmd: 'x', portDefinitions: [{ port: 0, name: 'http-api' }], readinessChecks: [{ protocol: 'TCP', httpStatusCodesForReady: ['x'] }] },
    {},
    {
      status: 400,
      body: { message: 'Invalid JSON', details: [{ path: '/readinessChecks(0)/httpStatusCodesForReady(0)', errors: ['error.expected.jsnumber'] }] },
    },
  ],
  [
    'ipAddress: defaults for network name and resource roles',
    { id: '/a', cmd: 'x', ipAddress: { discovery: { ports: [{ number: 80, name: 'http' }] } }, readinessChecks: [{ portName: 'http' }] },
    { defaultNetworkName: 'net', defaultAcceptedResourceRoles: ['*'] },
    {
      app: {
        readinessChecks: [
          {
            name: 'readinessCheck',
            protocol: 'HTTP',
            path: '/',
            portName: 'http',
            intervalSeconds: 30,
            timeoutSeconds: 10,
            httpStatusCodesForReady: [200],
            preserveLastResponse: false,
          },
        ],
        ipAddress: { groups: [], labels: {}, discovery: { ports: [{ number: 80, name: 'http' }] }, networkName: 'net' },
        acceptedResourceRoles: ['*'],
        ports: '<absent>',
        portDefinitions: '<absent>',
        requirePorts: '<absent>',
      },
    },
  ],
  [
    'ipAddress: empty network name, empty roles',
    { id: '/a', cmd: 'x', ipAddress: { networkName: '' }, acceptedResourceRoles: [] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/acceptedResourceRoles', errors: ['must not be empty'] },
          { path: '/ipAddress/networkName', errors: ['must not be empty'] },
        ],
      },
    },
  ],
  [
    "dependencies are resolved against the app's own id (Marathon's AppDefinition.withCanonizedIds)",
    { id: '/g/a', cmd: 'x', dependencies: ['../b', '/c', 'd'] },
    {},
    { app: { id: '/g/a', dependencies: ['/g/b', '/c', '/g/a/d'] } },
  ],
  [
    'a malformed dependency',
    { id: '/g/a', cmd: 'x', dependencies: ['BAD'] },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          {
            path: '/dependencies(0)',
            errors: [
              "must fully match regular expression '^(([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])\\.)*([a-z0-9]|[a-z0-9][a-z0-9\\-]*[a-z0-9])|(\\.|\\.\\.)$'",
            ],
          },
        ],
      },
    },
  ],
  [
    'executor, kill selection, single-instance label',
    { id: '/a', cmd: 'x', labels: { MARATHON_SINGLE_INSTANCE_APP: 'true' }, instances: 2, killSelection: 'X', executor: '//x//' },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/executor', errors: ["must fully match regular expression '^(//cmd)|(/?[^/]+(/[^/]+)*)|$'"] },
          { path: '/killSelection', errors: ['must be one of YOUNGEST_FIRST, OLDEST_FIRST'] },
          { path: '/', errors: ['Single instance app may only have one instance'] },
        ],
      },
    },
  ],
  [
    'a constraint that is not a list',
    { id: '/a', cmd: 'x', constraints: [['hostname', 'UNIQUE'], 'x'] },
    {},
    { status: 400, body: { message: 'Invalid JSON', details: [{ path: '/constraints(1)', errors: ['error.expected.jsarray'] }] } },
  ],
  [
    'constraint rules',
    {
      id: '/a',
      cmd: 'x',
      constraints: [
        ['hostname', 'UNIQUE', 'x'],
        ['hostname', 'FOO'],
        ['hostname'],
        ['hostname', 'CLUSTER'],
        ['hostname', 'MAX_PER', 'a'],
        ['hostname', 'LIKE'],
        ['hostname', 'LIKE', '(a)\\1'],
      ],
    },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/constraints(0)', errors: ['Value specified but not used'] },
          { path: '/constraints(1)', errors: ['Constraint operator must be one of the following: [UNIQUE, CLUSTER, GROUP_BY, LIKE, UNLIKE, MAX_PER]'] },
          { path: '/constraints(2)', errors: ['Each constraint must have either 2 or 3 fields'] },
          { path: '/constraints(3)', errors: ['Missing value'] },
          { path: '/constraints(4)', errors: ['Value was not an integer number'] },
          { path: '/constraints(5)', errors: ['A regular expression value must be provided'] },
          {
            path: '/constraints(6)',
            errors: [
              "'(a)\\1' is not a valid regular expression (error parsing regexp: invalid escape sequence: `\\1`; backreferences and lookaround are not supported: patterns are matched in linear time)",
            ],
          },
        ],
      },
    },
  ],
  ['the id from the URL wins', { id: '/other', cmd: 'x' }, { pathId: '/p' }, { app: { id: '/p' } }],
  [
    'env with secrets, upgrade strategy, kill grace period, user',
    {
      id: 'a',
      cmd: 'x',
      user: 'nobody',
      env: { A: '1', S: { secret: 'pw' } },
      secrets: { pw: { source: 'x' } },
      upgradeStrategy: { minimumHealthCapacity: 0.5, maximumOverCapacity: 0 },
      taskKillGracePeriodSeconds: 3,
      killSelection: 'OLDEST_FIRST',
      residency: { x: 1 },
      unreachableStrategy: 'disabled',
    },
    {},
    {
      app: {
        user: 'nobody',
        env: { A: '1', S: { secret: 'pw' } },
        upgradeStrategy: { minimumHealthCapacity: 0.5, maximumOverCapacity: 0 },
        residency: { x: 1 },
        secrets: { pw: { source: 'x' } },
        taskKillGracePeriodSeconds: 3,
        unreachableStrategy: 'disabled',
        killSelection: 'OLDEST_FIRST',
      },
    },
  ],
  [
    "pod identity labels: a namespace with a newline, a pod name that is no RFC 1123 subdomain (an app without ipAddress keeps Marathon's free labels)",
    { id: '/a', cmd: 'x', labels: { 'starmap.namespace': 'team\nb', 'starmap.pod': 'Web_1', HAPROXY_0_VHOST: 'a.example.com, b.example.com' } },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/labels/starmap.namespace', errors: [`Invalid value: "team\\nb": ${DNS_LABEL}`] },
          { path: '/labels/starmap.pod', errors: [`Invalid value: "Web_1": ${DNS_SUBDOMAIN}`] },
        ],
      },
    },
  ],
  [
    'pod identity labels: empty means the defaults; valid names are kept',
    { id: '/a', cmd: 'x', labels: { 'starmap.namespace': '', 'starmap.pod': 'web.v2' } },
    {},
    { app: { labels: { 'starmap.namespace': '', 'starmap.pod': 'web.v2' } } },
  ],
  [
    'the labels of an app with ipAddress (its tasks are pods) are Kubernetes labels; starmap.* keys are bookkeeping',
    {
      id: '/a',
      cmd: 'x',
      ipAddress: {},
      labels: { app: 'web', 'example.com/tier': 'front', 'bad key!': 'x', tier: 'has space', long: 'v'.repeat(64), 'starmap.scenario': 'any thing' },
    },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/labels/bad key!', errors: [`Invalid label key "bad key!": ${LABEL_NAME_PART}`] },
          { path: '/labels/tier', errors: [`Invalid value: "has space": ${LABEL_VALUE}`] },
          { path: '/labels/long', errors: [`Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`] },
        ],
      },
    },
  ],
  [
    'NUL in any label or env key or value (no task could start)',
    {
      id: '/a',
      cmd: 'x',
      env: { E: 'v\u0000', 'K\u0000': 'v', S: { secret: 'p\u0000w' } },
      secrets: { 'p\u0000w': { source: 'x' } },
      labels: { 'a\u0000b': 'x', 'c\u0000d': 'y', c: 'd\u0000', 'starmap.namespace': 'n\u0000' },
      portDefinitions: [{ port: 0, labels: { l: '\u0000' } }],
    },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/env/E', errors: [NUL] },
          { path: '/env', errors: [`key "K\\u0000" ${NUL}`] },
          { path: '/env/S', errors: [NUL] },
          { path: '/labels', errors: [`key "a\\u0000b" ${NUL}`, `key "c\\u0000d" ${NUL}`] },
          { path: '/labels/c', errors: [NUL] },
          { path: '/labels/starmap.namespace', errors: [NUL] },
          { path: '/portDefinitions(0)/labels/l', errors: [NUL] },
        ],
      },
    },
  ],
  [
    'duplicate named ports of one task: discovery ports (a rule for the name would open each number) and port mappings',
    {
      id: '/a',
      container: {
        type: 'DOCKER',
        docker: {
          image: 'i',
          network: 'USER',
          portMappings: [
            { containerPort: 80, name: 'web' },
            { containerPort: 81, name: 'web' },
          ],
        },
      },
      ipAddress: {
        discovery: {
          ports: [
            { number: 80, name: 'http' },
            { number: 8080, name: 'http' },
            { number: 81, name: 'metrics', protocol: 'udp,tcp' },
          ],
        },
      },
    },
    {},
    {
      status: 422,
      body: {
        message: 'Object is not valid',
        details: [
          { path: '/container/docker/portMappings', errors: ['Port names must be unique.'] },
          { path: '/ipAddress/discovery/ports', errors: ['Port names must be unique: "http" is the name of ports 80 and 8080'] },
        ],
      },
    },
  ],
];

describe('the app reader', () => {
  it('reads a minimal definition into the normalised form, in key order', () => {
    const app = parseApp({ id: '/a', cmd: 'x' }, { now: NOW });
    expect(app).toEqual(PLAIN);
    expect(Object.keys(app)).toEqual(Object.keys(PLAIN));
  });

  for (const [what, body, opts, answer] of CASES) {
    it(what, () => {
      const got = outcome(body, opts);
      if ('app' in answer) expect(got).toEqual({ app: expectedApp(answer.app) });
      else expect(got).toEqual(answer);
    });
  }

  it('returns semantic violations with a well-formed app (readApp), and throws type errors', () => {
    const { app, violations } = readApp({ id: '/a', cmd: 'x', instances: -1 }, { now: NOW });
    expect(app.instances).toBe(-1);
    expect(violations).toEqual([{ path: '/instances', errors: ['got -1, expected 0 or more'] }]);
    expect(() => readApp({ id: '/a', cmd: 1 }, { now: NOW })).toThrow('Invalid JSON');
  });

  it('keeps labels and env in prototype-free maps', () => {
    const app = parseApp(JSON.parse('{"id":"/a","cmd":"x","labels":{"__proto__":"p"},"env":{"constructor":"c"}}'), { now: NOW });
    expect(Object.getPrototypeOf(app.labels)).toBeNull();
    expect(Object.keys(app.labels)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(app.env)).toBeNull();
    expect(app.env.constructor).toBe('c');
  });
});

describe('ids and ports', () => {
  it('canonicalises paths against a base; `..` at the root stays there (Marathon PathId.canonicalPath)', () => {
    expect(canonicalPath('a/./b/../c')).toBe('/a/c');
    expect(canonicalPath('../x', '/g/h')).toBe('/g/x');
    expect(canonicalPath('/abs', '/g')).toBe('/abs');
    expect(canonicalPath('..')).toBe('/');
    expect(canonicalPath('/a/../../b')).toBe('/b');
  });

  it('checks ids segment by segment', () => {
    expect(idErrors('/a/b-c/d.e')).toEqual([]);
    expect(idErrors('/')).toEqual(['Path must contain at least one path element']);
    expect(idErrors('/a/../..')).toEqual(['Path must contain at least one path element']);
    expect(idErrors('..', '/g')).toEqual(['Path must contain at least one path element']);
    expect(idErrors('../x', '/g')).toEqual([]);
    expect(idErrors('/a/B')).toHaveLength(1);
    expect(idErrors('/a/B')[0]).toMatch(/^must fully match regular expression/);
  });

  it('names the ports a readiness check may use', () => {
    const ports = parseApp({ id: '/a', cmd: 'x', portDefinitions: [{ port: 0, name: 'http' }, { port: 0 }] }, { now: NOW });
    expect(appPortNames(ports)).toEqual(['http']);
    expect(bridgedMappings(ports)).toBeUndefined();
    const bridged = parseApp(
      { id: '/a', container: { type: 'DOCKER', docker: { image: 'i', network: 'BRIDGE', portMappings: [{ containerPort: 80, name: 'web' }] } } },
      { now: NOW },
    );
    expect(appPortNames(bridged)).toEqual(['web']);
    expect(bridgedMappings(bridged)?.map((m) => m.containerPort)).toEqual([80]);
    const ip = parseApp({ id: '/a', cmd: 'x', ipAddress: { discovery: { ports: [{ number: 80, name: 'h' }, { number: 81 }] } } }, { now: NOW });
    expect(appPortNames(ip as AppDefinition)).toEqual(['h']);
  });
});
