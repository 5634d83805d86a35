// The HTML report's intents and rule coverage of a step: each assertion with pass/fail and the
// cells behind it, and each rule with the cells it allowed (dead rules marked). Every string from
// the report is escaped (statements and policy names come from files).
import { esc } from './graph.ts';
import type { StepResultDoc } from './schema.ts';

const MAX_CELLS_SHOWN = 20;

export function intentsHtml(s: StepResultDoc): string {
  if (!s.assertions?.length) return '';
  const rows = s.assertions.map((a) => {
    const word = a.outcome === 'fail' ? 'FAIL' : a.outcome === 'pass' ? 'PASS' : s.observed ? 'NOT RUN' : a.policiesAgree ? 'PASS (computed)' : 'FAIL';
    const cells = a.cells.slice(0, MAX_CELLS_SHOWN).map((c) => `<li>${esc(`${c.from} -> ${c.to} ${c.port}/${c.protocol}: ${c.status}`)}</li>`);
    if (a.cells.length > MAX_CELLS_SHOWN) cells.push(`<li class="muted">… and ${a.cells.length - MAX_CELLS_SHOWN} more (the JSON report has every cell)</li>`);
    return `<details class="assertion" data-outcome="${esc(a.outcome)}"><summary><b>${esc(word)}</b> <span class="mono">${esc(a.statement)}</span> <span class="muted">(${a.cells.length} cell${a.cells.length === 1 ? '' : 's'}; ${esc(a.source)})</span></summary><ul class="mm">${cells.join('')}</ul></details>`;
  });
  return `<h4>Intents</h4>${rows.join('')}`;
}

export function rulesHtml(s: StepResultDoc): string {
  if (!s.rules?.length) return '';
  const dead = s.rules.filter((r) => r.dead).length;
  const items = s.rules.map((r) => {
    const name = `${r.policy} ${r.direction}[${r.rule}]`;
    if (r.dead) return `<li class="dead" data-dead="true"><span class="mono">${esc(name)}</span>: <b>${esc(r.dead)}</b></li>`;
    const shown = r.cells.slice(0, 3).map(esc).join(', ') + (r.cells.length > 3 ? ', …' : '');
    return `<li><span class="mono">${esc(name)}</span>: ${r.cells.length} cell${r.cells.length === 1 ? '' : 's'}${shown ? ` <span class="muted">(${shown})</span>` : ''}</li>`;
  });
  return `<h4>Rules (${s.rules.length}, ${dead} dead)</h4><ul class="mm rules">${items.join('')}</ul>`;
}
