// What `scenario run` writes to stdout: lines, and on a terminal one progress line that the next
// progress line overwrites (deployment states, a step's cells checked so far). A line written
// after a progress line first clears it (\r and ESC[K, erase to the end of the line), so that the
// terminal never shows `…TASK_RUNNINGcollector UI: http://…`. When stdout is not a terminal (a
// pipe, a file, CI) progress is not written at all: no \r ever reaches a log.

export interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const CLEAR = '\r\x1b[K';

export class TerminalLines {
  readonly #out: Output;
  /** A progress line is on screen (the cursor at its end). */
  #pending = false;
  constructor(out: Output) {
    this.#out = out;
  }
  readonly log = (line: string): void => {
    this.#out.write(`${this.#pending ? CLEAR : ''}${line}\n`);
    this.#pending = false;
  };
  readonly progress = (line: string): void => {
    if (!this.#out.isTTY) return;
    // A line wider than the terminal wraps, and \r returns only to the start of its last row.
    const width = this.#out.columns ? this.#out.columns - 1 : Infinity;
    this.#out.write(`${CLEAR}${line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line}`);
    this.#pending = true;
  };
  /** Clears a progress line left on screen (before the program's last words). */
  readonly clear = (): void => {
    if (this.#pending) this.#out.write(CLEAR);
    this.#pending = false;
  };
}
