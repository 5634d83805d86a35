// The orchestrator's flags, as config.ts declares them. Marathon's startup options are accepted in
// both spellings (--event_subscriber and --event-subscriber). The parser returns the configuration
// the orchestrator is built from (config.ts's configFrom), with config.ts's defaults.
import { parseFlags } from '../shared/cli.ts';
import { configFrom, ORCHESTRATOR_FLAGS, type OrchestratorConfig } from './config.ts';

export function parseOrchestratorFlags(argv: string[]): OrchestratorConfig {
  const flags = parseFlags(
    {
      name: 'orchestrator',
      description:
        'A Marathon-compatible scheduler for one machine, no cluster: apps, tasks (real processes on this host), ' +
        'deployments with rolling restarts, launch queue with back-off, health checks, events. Speaks the Marathon ' +
        '1.4 REST API (/v2/apps, /v2/tasks, /v2/deployments, /v2/queue, /v2/info, /v2/leader, /ping, /metrics). ' +
        'State lives in an SQLite database in --data-dir; every acknowledged change is on disk before the answer.',
      examples: [
        ['orchestrator --http-port=8080 --data-dir=/var/lib/starmap', 'serve on 127.0.0.1:8080'],
        ['orchestrator --event_subscriber http_callback --http_endpoints http://127.0.0.1:9000/cb', 'with HTTP callbacks'],
        [
          'sudo orchestrator --isolation=netns --netns-subnet=10.213.0.0/24',
          'tasks of apps with ipAddress in their own network namespaces, with network policies (root, iproute2, nftables)',
        ],
      ],
      epilogue: 'Marathon startup options are accepted with underscores or dashes. Docs: docs/orchestrator.md.',
      flags: ORCHESTRATOR_FLAGS,
      refine: (y) =>
        y.check((a) => {
          if ((a['local-port-min'] as number) >= (a['local-port-max'] as number))
            throw new Error('invalid value for --local-port-min: must be below --local-port-max');
          if ((a['task-port-min'] as number) > (a['task-port-max'] as number))
            throw new Error('invalid value for --task-port-min: must not exceed --task-port-max');
          return true;
        }),
    },
    argv,
  );
  return configFrom(flags);
}
