// What is wrong with a scenario file, gathered over one resolving pass (resolve.ts) and said at
// once, each with its JSON pointer and line, at most MAX_PROBLEMS of them.
import { labelKeyErrors, labelValueErrors } from '../../shared/netpol/names.ts';
import { ScenarioError, type ParsedScenario } from './scenario-file.ts';

/** Problems said at most; the rest are counted. */
const MAX_PROBLEMS = 30;

export class Problems {
  // Lines are looked up only for the problems that are said: finding one scans the text, and a
  // file of 100,000 duplicate steps would scan it 100,000 times.
  readonly list: { pointer: string; message: string }[] = [];
  /** What was read and ignored beside the problems (policies: - file: of manifests), said by check and run. */
  readonly notes: string[] = [];
  readonly parsed: ParsedScenario;
  constructor(parsed: ParsedScenario) {
    this.parsed = parsed;
  }
  add(pointer: string, message: string): void {
    this.list.push({ pointer, message });
  }
  labels(pointer: string, labels: Record<string, string> | undefined): void {
    for (const [k, v] of Object.entries(labels ?? {})) {
      const at = `${pointer}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      for (const m of labelKeyErrors(k)) this.add(at, `label key: ${m}`);
      for (const m of labelValueErrors(v)) this.add(at, `label value: ${m}`);
    }
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    const said = this.list.slice(0, MAX_PROBLEMS).map((p) => `${p.pointer}${this.parsed.at(p.pointer)}: ${p.message}`);
    const more = this.list.length - said.length;
    throw new ScenarioError(`${this.parsed.file}: invalid scenario:\n  ${said.join('\n  ')}${more > 0 ? `\n  … and ${more} more` : ''}`);
  }
}
