// The allowed direction of imports between the project's parts, as one ESLint rule over one table,
// so that `npm run lint` fails when a part reaches back up. Each entry says: files under `from`
// must not import `to` (a folder or file of the repository, or a `node:` module), and why. A folder's
// own files are never forbidden to it. Sources are resolved against the importing file, so the
// table is written in repository paths whatever the depth of the file.
import { dirname, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');

const PROGRAMS = ['probe/', 'collector/', 'orchestrator/', 'scenarios/'];
const OUTSIDE = ['scripts/', 'test/', 'bench/'];
const ORCHESTRATOR = [
  'api',
  'auth',
  'deployment',
  'events',
  'formats',
  'group',
  'health',
  'http',
  'isolation',
  'launch-queue',
  'state',
  'storage',
  'tasks',
].map((name) => `orchestrator/${name}/`);
const but = (all, ...allowed) => all.filter((name) => !allowed.includes(name));

/** @type {{ from: string, to: string[], why: string }[]} */
export const BOUNDARIES = [
  // The programs stand on shared/, never on each other; scripts, tests and benchmarks stand on top.
  { from: 'shared/', to: [...PROGRAMS, ...OUTSIDE], why: 'shared/ is what the programs have in common and depends on none of them' },
  { from: 'probe/', to: but([...PROGRAMS, ...OUTSIDE], 'probe/'), why: 'the agents depend on shared/ only' },
  { from: 'collector/', to: but([...PROGRAMS, ...OUTSIDE], 'collector/'), why: 'the agents depend on shared/ only' },
  { from: 'orchestrator/', to: but([...PROGRAMS, ...OUTSIDE], 'orchestrator/'), why: 'the orchestrator depends on shared/ only' },
  // scenarios/ drives an orchestrator and feeds a collector: it may read their wire types and defaults.
  { from: 'scenarios/', to: ['probe/', ...OUTSIDE], why: 'scenarios/ drives the programs through their APIs' },
  // Inside scenarios/: cli/ (one file per command) stands on run/ (deploy, apply, observe, settle),
  // which stands on report/ (results and their formats), which stands on model/ (reading and meaning).
  {
    from: 'scenarios/model/',
    to: ['scenarios/cli/', 'scenarios/run/', 'scenarios/report/', 'scenarios/main.ts'],
    why: 'the model says what a scenario means, with no notion of running or reporting it',
  },
  { from: 'scenarios/report/', to: ['scenarios/cli/', 'scenarios/run/', 'scenarios/main.ts'], why: 'reports render results they are given' },
  { from: 'scenarios/run/', to: ['scenarios/cli/', 'scenarios/main.ts'], why: 'the runner is driven by the commands, never the other way' },
  // The pure NetworkPolicy model: no I/O, nothing outside itself.
  { from: 'shared/netpol/', to: ['node:', 'shared/'], why: 'shared/netpol/ is pure (no I/O) and self-contained' },
  // The evaluator and the nftables renderer stay independent: each checks the other on real packets,
  // which only works while neither computes its answers with the other's code.
  {
    from: 'orchestrator/',
    to: ['shared/netpol/evaluate.ts', 'shared/netpol/explain.ts', 'shared/netpol/tiers.ts'],
    why: "the orchestrator renders policies on its own; the evaluator is the renderer's independent check",
  },
  // Inside the orchestrator (docs/architecture.md).
  { from: 'orchestrator/http/', to: ORCHESTRATOR, why: 'the HTTP layer knows the domain errors and nothing else of the orchestrator' },
  {
    from: 'orchestrator/isolation/',
    to: but(ORCHESTRATOR, 'orchestrator/http/'),
    why: 'the isolation is handed what it needs and never reads the scheduler’s parts',
  },
  {
    from: 'orchestrator/formats/',
    to: ['api', 'auth', 'deployment', 'events', 'group', 'http', 'isolation', 'launch-queue', 'tasks'].map((n) => `orchestrator/${n}/`),
    why: 'formats turn the model into JSON, with no I/O',
  },
  {
    from: 'orchestrator/auth/',
    to: ['api', 'deployment', 'events', 'formats', 'health', 'isolation', 'launch-queue', 'tasks'].map((n) => `orchestrator/${n}/`),
    why: 'login and tokens know accounts, not apps',
  },
  {
    from: 'orchestrator/events/',
    to: ['api', 'auth', 'deployment', 'formats', 'health', 'isolation', 'launch-queue', 'state'].map((n) => `orchestrator/${n}/`),
    why: 'the event bus carries what it is given',
  },
  // The model, its storage and the group manager, each standing on the one before (the API rule below covers api/).
  {
    from: 'orchestrator/state/',
    to: [
      ...but(ORCHESTRATOR, 'orchestrator/api/', 'orchestrator/state/', 'orchestrator/isolation/'),
      'orchestrator/scheduler.ts',
      'orchestrator/orchestrator.ts',
    ],
    why: 'state/ is the model (what an app, a group and a change are); it knows no storage, planning or running',
  },
  {
    from: 'orchestrator/storage/',
    to: [
      ...but(ORCHESTRATOR, 'orchestrator/api/', 'orchestrator/storage/', 'orchestrator/state/', 'orchestrator/tasks/'),
      'orchestrator/scheduler.ts',
      'orchestrator/orchestrator.ts',
    ],
    why: 'storage/ keeps the model on disk and knows nothing of what changes it',
  },
  {
    from: 'orchestrator/group/',
    to: [
      ...but(ORCHESTRATOR, 'orchestrator/api/', 'orchestrator/group/', 'orchestrator/state/', 'orchestrator/storage/', 'orchestrator/deployment/'),
      'orchestrator/scheduler.ts',
      'orchestrator/orchestrator.ts',
    ],
    why: 'the group manager plans a change of the model; the scheduler runs it',
  },
  {
    from: 'orchestrator/deployment/',
    to: ['orchestrator/group/', 'orchestrator/scheduler.ts', 'orchestrator/orchestrator.ts'],
    why: 'a deployment reads the apps it is given; changing them is the group manager’s',
  },
  ...but(ORCHESTRATOR, 'orchestrator/api/').map((from) => ({ from, to: ['orchestrator/api/'], why: 'the API calls into the parts, never the other way' })),
];

/** The repository path (or `node:` name) that `source`, imported by `file`, names; undefined for packages. */
function target(file, source) {
  if (source.startsWith('node:')) return source;
  if (!source.startsWith('.')) return undefined;
  return relative(ROOT, resolve(dirname(file), source));
}

/** The boundary an import crosses, if any. */
export function crossed(file, source) {
  const from = relative(ROOT, file);
  const to = target(file, source);
  if (to === undefined) return undefined;
  return BOUNDARIES.find(
    (b) => from.startsWith(b.from) && b.to.some((t) => to.startsWith(t) && !(t.endsWith('/') && to.startsWith(b.from) && b.from.startsWith(t))),
  );
}

export const boundariesPlugin = {
  rules: {
    imports: {
      meta: { type: 'problem', schema: [], docs: { description: 'the allowed direction of imports between parts (scripts/lint/boundaries.js)' } },
      create(context) {
        const check = (node) => {
          if (node.source?.type !== 'Literal' || typeof node.source.value !== 'string') return;
          const b = crossed(context.filename, node.source.value);
          if (b) context.report({ node: node.source, message: `${b.from} must not import ${node.source.value}: ${b.why}` });
        };
        return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
      },
    },
  },
};
