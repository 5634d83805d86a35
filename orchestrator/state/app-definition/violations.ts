// Collecting violations the way Marathon reports them: one entry per path, in the order the paths
// were first found, each with its errors in the order they were found (no repeats).
import type { Violation } from './types.ts';

export class Violations {
  readonly errors: Violation[] = [];

  add(path: string, error: string): void {
    const found = this.errors.find((e) => e.path === path);
    if (found) {
      if (!found.errors.includes(error)) found.errors.push(error);
    } else this.errors.push({ path, errors: [error] });
  }
}

/** Scala's Double.toString, as Marathon's messages print doubles: 3 → "3.0". */
export function fmtDouble(n: number): string {
  return Number.isInteger(n) ? n.toFixed(1) : String(n);
}
