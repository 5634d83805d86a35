// A minimal server-sent-events client for the events tests and bench: a real node:http
// connection, the raw bytes kept, frames parsed as they arrive.
import { request, type ClientRequest, type IncomingMessage } from 'node:http';

export interface SseFrame {
  event: string;
  data: unknown;
  raw: string;
}

export interface SseClient {
  status: number;
  headers: IncomingMessage['headers'];
  frames: SseFrame[];
  /** Everything received so far. */
  raw(): string;
  /** Called for each frame as it arrives (bench timing). */
  onFrame?: (frame: SseFrame) => void;
  ended: boolean;
  close(): void;
}

/** Opens GET `path` with Accept text/event-stream and resolves once the headers are in. */
export function openSse(base: string, path = '/v2/events', headers: Record<string, string> = {}): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    let req: ClientRequest | undefined = undefined;
    req = request(base + path, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (res) => {
      const chunks: string[] = [];
      let pending = '';
      const client: SseClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        frames: [],
        raw: () => chunks.join(''),
        ended: false,
        close: () => {
          req?.destroy();
        },
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        chunks.push(chunk);
        // The search starts where the last one ended (a large frame arrives in many chunks).
        let from = Math.max(0, pending.length - 3);
        pending += chunk;
        let at: number;
        while ((at = pending.indexOf('\r\n\r\n', from)) >= 0) {
          from = 0;
          const block = pending.slice(0, at);
          pending = pending.slice(at + 4);
          // Heartbeats (bare CRLF) leave leading CRLFs in front of the next block.
          const text = block.replace(/^(\r\n)+/, '');
          if (text === '' || text.startsWith(':')) continue;
          const lines = text.split('\r\n');
          const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
          const dataLine = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '';
          const frame: SseFrame = { event, data: JSON.parse(dataLine) as unknown, raw: block };
          client.frames.push(frame);
          client.onFrame?.(frame);
        }
      });
      res.on('end', () => (client.ended = true));
      res.on('close', () => (client.ended = true));
      res.on('error', () => (client.ended = true));
      resolve(client);
    });
    req.on('error', reject);
    req.end();
  });
}
