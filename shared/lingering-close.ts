// Reading the rest of a request body that is answered before it is read: a 413 sent from the
// headers (Content-Length over the limit). If the server answers and closes while the client is
// still sending, the kernel resets the connection on the unread bytes, and a client that writes
// its whole body before it reads (undici, fetch) sees EPIPE or ECONNRESET instead of the 413. So the
// rest is read and thrown away first, as nginx's "lingering close" does, within bounds: a client
// that stops sending, or sends too much or for too long, gets the answer at once and the
// connection closes, as before.
import type { IncomingMessage } from 'node:http';

export interface DrainLimits {
  /** Most bytes read and thrown away (default 64 MiB). */
  maxBytes?: number;
  /** Longest time spent draining (default 10 s). */
  maxMs?: number;
  /** Longest wait for the next bytes (default 1 s). */
  idleMs?: number;
}

/**
 * Reads and discards what is left of `req`'s body. Resolves true when it was all read (the
 * connection can be kept), false when a bound was hit (answer with `connection: close`).
 */
export function drainRequest(req: IncomingMessage, limits: DrainLimits = {}): Promise<boolean> {
  const { maxBytes = 64 * 1024 * 1024, maxMs = 10_000, idleMs = 1000 } = limits;
  if (req.complete) return Promise.resolve(true);
  return new Promise((resolve) => {
    let read = 0;
    const idle = setTimeout(() => finish(false), idleMs);
    const overall = setTimeout(() => finish(false), maxMs);
    function finish(all: boolean): void {
      clearTimeout(idle);
      clearTimeout(overall);
      req.off('data', onData).off('end', onEnd).off('error', onEnd).off('aborted', onEnd);
      if (!all) req.pause();
      resolve(all);
    }
    function onData(chunk: Buffer): void {
      read += chunk.length;
      if (read > maxBytes) return finish(false);
      idle.refresh();
    }
    function onEnd(): void {
      finish(req.complete);
    }
    req.on('data', onData).once('end', onEnd).once('error', onEnd).once('aborted', onEnd);
    req.resume();
  });
}
