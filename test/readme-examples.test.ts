// The orchestrator's documented examples, run as written: the commands are read out of
// docs/orchestrator.md (the README points there) and run by bash in a fresh HOME (no XDG_STATE_HOME), so a reader who copies them gets an orchestrator,
// its admin password, a token, the app list and a service account. The only change: port 8080 is
// replaced by a free one (other orchestrators may run on this machine). Also: nothing is written
// into the clone.
// And the manifests examples of docs/scenarios.md (`scenario check` on examples/), run as written.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, freePort, runToEnd, start, stopAll, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/wait.ts';

afterAll(stopAll);

/** The shell code blocks of the section of `file` that starts with `heading` (up to the next heading of any level). */
function shellBlocks(file: string, heading: string): string[] {
  const text = `\n${readFileSync(join(ROOT, file), 'utf8')}`;
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`${file} has no section "${heading}"`);
  // The section ends at the next heading outside a code block (a shell comment is no heading).
  const lines = text.slice(at + heading.length + 2).split('\n');
  let inCode = false;
  const end = lines.findIndex((line) => {
    if (line.startsWith('```')) inCode = !inCode;
    return !inCode && /^#{1,6} /.test(line);
  });
  const section = (end < 0 ? lines : lines.slice(0, end)).join('\n');
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

function missing(...cmds: string[]): string[] {
  return cmds.filter((c) => {
    try {
      execFileSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
}

const tools = missing('curl', 'jq', 'openssl', 'npm');
if (tools.length) console.warn(`readme-examples tests skipped: ${tools.join(', ')} missing (apt-get install curl jq openssl npm)`);

function gitStatus(): string {
  return execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' });
}

describe.skipIf(tools.length > 0)("the orchestrator's documented examples", () => {
  it('start it, read the admin password, log in, list apps, add a service account; the clone stays clean', async () => {
    const [startBlock, passwordBlock] = shellBlocks('docs/orchestrator.md', '# The orchestrator');
    const [loginBlock] = shellBlocks('docs/orchestrator.md', '## Login and tokens');
    expect(startBlock).toMatch(/^npm run orchestrator\b/);
    expect(passwordBlock).toContain('admin-password');
    expect(loginBlock).toContain('auth/login');
    const port = await freePort();
    const home = tempDir('readme-home-');
    const env = { HOME: home, XDG_STATE_HOME: '' };
    const before = gitStatus();
    const localPort = (code: string) => code.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);

    const orch = start('bash', ['-c', startBlock!.replace(/^npm run orchestrator\b/m, `npm run --silent orchestrator -- --http-port=${port}`)], { env });
    await waitFor(
      async () => {
        if (orch.child.exitCode !== null) throw new Error(`the orchestrator exited: ${orch.output()}`);
        return (await fetch(`http://127.0.0.1:${port}/ping`).catch(() => undefined))?.ok;
      },
      { timeoutMs: 30_000, message: 'the orchestrator answers' },
    );

    const password = await runToEnd('bash', ['-euo', 'pipefail', '-c', passwordBlock!], { env });
    expect(password.code, password.output).toBe(0);
    const file = join(home, '.local/state/starmap/orchestrator/admin-password');
    expect(password.output.trim()).toBe(readFileSync(file, 'utf8').trim());
    expect(statSync(file).mode & 0o077).toBe(0);

    // The login block in a scratch folder (it writes bot.key and bot.pub where it runs).
    const work = tempDir('readme-work-');
    const login = await runToEnd('bash', ['-euo', 'pipefail', '-c', `cd ${JSON.stringify(work)}\n${localPort(loginBlock!)}\necho "TOKEN=$TOKEN"`], {
      env,
      timeoutMs: 60_000,
    });
    expect(login.code, login.output).toBe(0);
    expect(login.output).toMatch(/TOKEN=ey[\w-]+\.[\w-]+\.[\w-]+/); // a JWT, not "null"
    expect(login.output).toContain('"apps"');
    expect(existsSync(join(work, 'bot.pub'))).toBe(true);
    const token = /TOKEN=(\S+)/.exec(login.output)![1]!;
    const bot = await fetch(`http://127.0.0.1:${port}/acs/api/v1/users/bot`, { headers: { authorization: `token=${token}` } });
    expect(bot.status).toBe(200);

    // Ctrl-C in the terminal: the whole process group (bash, npm, the orchestrator) gets SIGINT.
    await orch.stop('SIGINT');
    expect(
      await fetch(`http://127.0.0.1:${port}/ping`).then(
        () => 'answers',
        () => 'gone',
      ),
    ).toBe('gone');
    expect(gitStatus()).toBe(before);
  }, 120_000);
});

describe.skipIf(tools.length > 0)("the scenarios' documented manifests examples", () => {
  it('scenario check and explain on examples/shop (a directory, stdin) and the rollout scenario, as written; the clone stays clean', async () => {
    const [block, run] = shellBlocks('docs/scenarios.md', '## Point it at your manifests');
    expect(block).toContain('check examples/shop');
    expect(run).toBeUndefined(); // the packets run is described in the text, tested in scenario-manifests-isolated
    const before = gitStatus();
    const r = await runToEnd('bash', ['-euo', 'pipefail', '-c', block!], { timeoutMs: 90_000 });
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('manifests: 2 files: 4 workloads (3 Deployment, 1 StatefulSet) making 4 pods, 3 NetworkPolicies, 3 Services, 3 namespaces');
    expect(r.output).toContain('ignored 5 objects: 2 ConfigMap, 1 Ingress, 1 Secret, 1 ServiceAccount');
    expect(r.output).toMatch(/5432\/TCP\ncomputed\n\s+shop-data\/postgres\nshop\/web\s+X\nshop\/api\s+\.\nmonitoring\/prometheus X\n/);
    expect(r.output).toContain('shop/web -> shop-data/postgres 5432/TCP: blocked');
    expect(r.output).toContain('making 7 pods'); // --replicas from stdin
    expect(r.output).toContain('shop-rollout: the policies say what every step intends');
    // --assert examples/shop-asserts.yaml: every intent passes; the rules nothing exercises are named.
    expect(r.output).toContain('  assert PASS: deny: * -> shop-data/postgres:postgres except shop/api (3 cells; examples/shop-asserts.yaml #2)');
    expect(r.output).toContain('  shop/api egress[1]: dead: no pod or external matches its peers');
    expect(gitStatus()).toBe(before);
  }, 120_000);
});

describe('the diff example of docs/scenarios.md', () => {
  it('runs as written and prints what the page shows', async () => {
    const [block] = shellBlocks('docs/scenarios.md', '## Review a change: `scenario diff`');
    expect(block).toContain('diff examples/shop-rollout.yaml');
    const shown = /## Review a change[\s\S]*?```text\n([\s\S]*?)\n {2}\.\.\.\n```/.exec(readFileSync(join(ROOT, 'docs/scenarios.md'), 'utf8'))![1]!;
    const r = await runToEnd('bash', ['-euo', 'pipefail', '-c', block!], { timeoutMs: 90_000 });
    expect(r.code, r.output).toBe(0);
    // Every line the page shows is in the output, in order.
    const lines = shown.split('\n');
    const out = r.output.split('\n');
    let at = 0;
    for (const line of lines) {
      const i = out.indexOf(line, at);
      expect(i, `"${line}" in:\n${r.output}`).toBeGreaterThanOrEqual(0);
      at = i + 1;
    }
  }, 120_000);
});
