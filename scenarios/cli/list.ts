// `scenario list`: the built-in scenarios, single ones first, then the sets' members.
import type { CommandModule } from 'yargs';
import { plural } from '../../shared/plural.ts';
import { BUILTIN } from '../model/builtin.ts';
import { load } from './options.ts';

export const listCommand: CommandModule = {
  command: 'list',
  describe: 'list the built-in scenarios',
  handler: () => {
    const names = Object.keys(BUILTIN).sort((a, b) => Number(a.includes('/')) - Number(b.includes('/')) || a.localeCompare(b));
    const width = Math.max(...names.map((n) => n.length));
    for (const name of names) {
      const s = load(name);
      process.stdout.write(`${name.padEnd(width)}  ${s.description ?? ''} (${plural(s.steps.length, 'step')})\n`);
    }
  },
};
