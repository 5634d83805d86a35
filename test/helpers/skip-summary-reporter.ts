// A vitest reporter that ends the run with every skipped suite and why: the skipped tests grouped
// by file under the largest part skipped as a whole, then the reasons the test files printed (the "… skipped: …"
// warnings of warnIfNoChromium, isolationSkip and the like), each once. A test that cannot run here
// must never pass silently.
import { relative } from 'node:path';
import type { Reporter, TestCase, TestModule } from 'vitest/node';

/** The largest skipped part a test belongs to: its outermost suite skipped as a whole (what a skipIf wraps), else the test. */
function skippedPart(test: TestCase): string {
  let name = test.name;
  let node: TestCase['parent'] = test.parent;
  while (node.type === 'suite' && node.state() === 'skipped') {
    name = node.name;
    node = node.parent;
  }
  return name;
}

export default class SkipSummaryReporter implements Reporter {
  readonly #reasons = new Set<string>();

  onUserConsoleLog(log: { content: string }): void {
    for (const line of log.content.split('\n')) if (/\bskipped\b/i.test(line) && line.length < 500) this.#reasons.add(line.trim());
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows: string[] = [];
    let total = 0;
    for (const m of modules) {
      const suites = new Map<string, number>();
      for (const t of m.children.allTests()) {
        const result = t.result();
        if (result.state !== 'skipped') continue;
        total++;
        const name = skippedPart(t);
        // ctx.skip(note): the test says why itself.
        if (result.note) this.#reasons.add(`${relative(process.cwd(), m.moduleId)}: ${result.note}`);
        suites.set(name, (suites.get(name) ?? 0) + 1);
      }
      const file = relative(process.cwd(), m.moduleId);
      for (const [name, n] of suites) rows.push(`  ${file}: ${name} (${n} test${n > 1 ? 's' : ''})`);
    }
    const out = process.stdout;
    if (total === 0) {
      out.write('\nSkipped: nothing; every suite ran.\n');
      return;
    }
    out.write(`\nSkipped: ${total} test${total > 1 ? 's' : ''}, in these suites:\n${rows.join('\n')}\n`);
    out.write(
      this.#reasons.size
        ? `Why (as the test files said):\n${[...this.#reasons].map((r) => `  ${r}`).join('\n')}\n`
        : '(No reason printed: the names above say what they need.)\n',
    );
    out.write('On Debian or Ubuntu, `npm test` run as root installs the system packages they need (README, "Set up").\n');
  }
}
