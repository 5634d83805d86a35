// `scenario export FILE --to DIR`: the scenario as plain manifests for a real cluster
// (run/kubernetes-manifests.ts says what is in them; docs/kubernetes.md how to use them).
// `--to -` prints every file to stdout, each after a `# ==> path <==` line, for reading.
import type { Argv, CommandModule } from 'yargs';
import { join } from 'node:path';
import { exportScenario, type KubernetesExport } from '../run/kubernetes-manifests.ts';
import { writeExport } from '../run/kubernetes-files.ts';
import { ScenarioError } from '../errors.ts';
import { fail, imageOption, load, loadOptions, manifestOptions, scenarioPositional, scenarioRef } from './options.ts';

export const exportCommand: CommandModule = {
  command: 'export <scenario>',
  describe: 'write the scenario as Kubernetes manifests (namespaces, probe pods, collector, observer; each step’s policies in step-N/) for kubectl apply',
  builder: (y: Argv) =>
    y.positional('scenario', scenarioPositional).options(manifestOptions).options(imageOption).option('to', {
      type: 'string',
      demandOption: true,
      nargs: 1,
      describe: 'directory to write (new, empty, or an earlier export); - prints every file to stdout',
    }),
  handler: (a) => {
    const s = load(scenarioRef(a.scenario), loadOptions(a));
    let ex: KubernetesExport;
    try {
      ex = exportScenario(s, { image: String(a.image) });
      if (a.to === '-' || a.to === '') {
        process.stdout.write(ex.files.map((f) => `# ==> ${f.path} <==\n${f.path.endsWith('.md') ? f.content.replace(/^/gm, '# ') : f.content}`).join('\n'));
      } else writeExport(ex, String(a.to));
    } catch (err) {
      if (err instanceof ScenarioError) fail(err.message);
      throw err;
    }
    for (const n of ex.notes) process.stderr.write(`note: ${n}\n`);
    if (a.to !== '-' && a.to !== '')
      process.stderr.write(
        `wrote ${ex.files.length} files to ${String(a.to)} (${ex.steps.length} steps); ${join(String(a.to), 'README.md')} says how to apply them\n`,
      );
  },
};
