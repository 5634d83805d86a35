// Counts in what the CLI and the reports say: "1 cell", "2 cells", "0 cells".

/** `n` and the noun, with an s unless n is 1 (`plural(3, 'step')` → "3 steps"). */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : nouns}`;
}
