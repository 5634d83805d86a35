/* eslint-disable @typescript-eslint/no-explicit-any */
// One HTTP request to a loopback port with exactly the headers given, Host included (node:http:
// fetch would not send a Host of the test's choosing), as browsers and other clients send them.
import { request } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body parsed as JSON, or its text when it is not JSON. */
  body: any;
  text: string;
}

/** Sends `method path` to 127.0.0.1:`port`; the Host is 127.0.0.1:`port` unless `headers` has one. */
export function sendRaw(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode!, headers: res.headers, body: parsed, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
