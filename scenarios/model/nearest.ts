// "Did you mean": the names nearest to a mistyped one by edit distance, for unknown pods, steps
// and policies (`--to shop/wbe` → shop/web).

/**
 * Edit distance with swapped neighbours as one edit (optimal string alignment): `wbe` is one
 * edit from `web`, as a typist sees it, and two from `db`.
 */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, before[j - 2]! + 1);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The known names nearest to `name` (those at the smallest distance, at most `max`), among those a
 * typo could have come from: at most half its length away (at least 1, at most 3 edits).
 */
export function nearest(name: string, known: Iterable<string>, max = 3): string[] {
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 2)));
  const clipped = name.slice(0, 256); // names are short; a huge argument costs no more than this
  const near = [...new Set(known)].map((k) => ({ k, d: editDistance(clipped, k) })).filter((x) => x.d > 0 && x.d <= limit);
  const best = Math.min(...near.map((x) => x.d));
  return near
    .filter((x) => x.d === best)
    .map((x) => x.k)
    .sort()
    .slice(0, max);
}

/** ' (nearest: a, b)' or, when nothing is near, ' (known: …)' listing up to ten, for error messages. */
export function nearestText(name: string, known: readonly string[]): string {
  const near = nearest(name, known);
  if (near.length > 0) return ` (nearest: ${near.join(', ')})`;
  if (known.length === 0) return '';
  return ` (known: ${known.slice(0, 10).join(', ')}${known.length > 10 ? `, … ${known.length - 10} more` : ''})`;
}
