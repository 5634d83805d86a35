// The collector's command line from source: star's flags and defaults, --help and --version, and
// resources files that are missing, not JSON or hold a bad entry (the message names the file,
// the entry's index and the problem).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NODE, freePort, runToEnd, start, stopAll, tempDir, waitForHttp } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

afterAll(stopAll);

const run = (args: string[]) => runToEnd(NODE, ['collector/main.ts', ...args]);

describe('collector flags', () => {
  it("--help lists star's flags and ours with their defaults", async () => {
    const { code, output } = await run(['--help']);
    expect(code).toBe(0);
    for (const flag of [
      '--http-address',
      '--http-port',
      '--http-request-seconds',
      '--resources-file',
      '--logfile',
      '--timeout-seconds',
      '--concurrency',
      '--max-body-bytes',
      '--log-level',
      '--version',
    ]) {
      expect(output).toContain(flag);
    }
    expect(output).toMatch(/--http-port[^\n]*9001/);
    expect(output).toMatch(/--http-address[^\n]*0\.0\.0\.0/);
  });

  it('--version prints the version', async () => {
    const { code, output } = await run(['--version']);
    expect(code).toBe(0);
    expect(output.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('a bad value exits 2 naming the flag', async () => {
    for (const [arg, text] of [
      ['--http-port=nope', '--http-port'],
      ['--timeout-seconds=0', '--timeout-seconds'],
      ['--concurrency=1.5', '--concurrency'],
      ['--bogus=1', 'bogus'],
    ]) {
      const { code, output } = await run([arg!]);
      expect(code, arg).toBe(2);
      expect(output).toContain(text);
    }
  });

  describe('--resources-file', () => {
    const dir = tempDir('starmap-collector-');
    const cases: [string, string | undefined, RegExp][] = [
      ['missing', undefined, /missing\.json: cannot read the file: no such file/],
      ['not JSON', '[{"id": "a",', /notjson\.json: not valid JSON/],
      ['not an array', '{"id": "a"}', /notarray\.json: expected a JSON array/],
      ['an entry without url', '[{"id": "a", "url": "http://a/"}, {"id": "b"}]', /entry at index 1: field "url" is required/],
      ['an entry with a bad id', '[{"id": "a b", "url": "http://a/"}]', /entry at index 0: field "id" "a b" is not a valid id/],
      [
        'an entry with a bad url',
        '[{"id": "a", "url": "http://a/"}, {"id": "b", "url": "http://b/"}, {"id": "c", "url": "tcp://c:1"}]',
        /entry at index 2: field "url" "tcp:\/\/c:1" must be an http/,
      ],
      ['an entry that is not an object', '[{"id": "a", "url": "http://a/"}, "http://b/"]', /entry at index 1: expected a JSON object/],
      [
        'a duplicate id',
        '[{"id": "a", "url": "http://a/"}, {"id": "a", "url": "http://b/"}]',
        /entry at index 1: id "a" is already used by the entry at index 0/,
      ],
    ];
    for (const [what, content, message] of cases) {
      it(`stops start-up on ${what}`, async () => {
        const file = join(
          dir,
          `${what === 'missing' ? 'missing' : what === 'not JSON' ? 'notjson' : what === 'not an array' ? 'notarray' : what.replace(/\W+/g, '-')}.json`,
        );
        if (content !== undefined) writeFileSync(file, content);
        const { code, output } = await run([`--resources-file=${file}`, '--http-port=0']);
        expect(code).toBe(2);
        expect(output).toContain('--resources-file');
        expect(output).toContain(file);
        expect(output).toMatch(message);
      });
    }

    it("loads star's array format and the GET /resources document; logs go to --logfile", async () => {
      for (const doc of [
        [
          { id: 'a', url: 'http://127.0.0.1:9/a' },
          { id: 'b', url: 'http://127.0.0.1:9/b' },
        ],
        {
          resources: [
            { id: 'a', url: 'http://127.0.0.1:9/a' },
            { id: 'b', url: 'http://127.0.0.1:9/b' },
          ],
        },
      ]) {
        const file = join(dir, 'good.json');
        writeFileSync(file, JSON.stringify(doc));
        const logfile = join(dir, 'collector.log');
        const port = await freePort();
        const proc = start(NODE, [
          'collector/main.ts',
          `--resources-file=${file}`,
          '--http-address=127.0.0.1',
          `--http-port=${port}`,
          `--logfile=${logfile}`,
          '--http-request-seconds=0.2',
          '--timeout-seconds=0.5',
        ]);
        await waitForHttp(`http://127.0.0.1:${port}/healthz`);
        const list = await (await fetch(`http://127.0.0.1:${port}/resources`)).json();
        expect(list).toEqual({
          resources: [
            { id: 'a', url: 'http://127.0.0.1:9/a' },
            { id: 'b', url: 'http://127.0.0.1:9/b' },
          ],
        });
        await waitFor(async () => {
          const r = (await (await fetch(`http://127.0.0.1:${port}/responses`)).json()) as { details: Record<string, { error: { reason: string } | null }> };
          return r.details.a?.error?.reason === 'refused';
        });
        expect(await proc.stop('SIGTERM')).toBe(0);
        const log = readFileSync(logfile, 'utf8');
        expect(log).toContain('collector listening');
        expect(log).toContain('resource fetch failed');
      }
    });
  });
});
