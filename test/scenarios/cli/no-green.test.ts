// Issue 32, "a pass means something": the four answers of the evaluator, deterministic addressing
// (check and run agree on the addresses), `scenario check` deciding ipBlock cells with them and
// listing what stays undecided (exit 3 unless --allow-undecided), `check --report-html`, explain's
// address and except lines, and where isolationMissing looks for nft. The isolated run that
// proves check and run agree is in scenario-isolated-addresses.test.ts.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkScenario } from '../../../scenarios/cli/check.ts';
import { explainConnection } from '../../../scenarios/cli/explain.ts';
import { findCommand, isolationGap, isolationMissing } from '../../../scenarios/cli/run.ts';
import { plannedAddresses, RUN_SUBNET } from '../../../scenarios/model/addresses.ts';
import { loadScenario } from '../../../scenarios/model/load.ts';
import { planApps } from '../../../scenarios/run/deploy-plan.ts';
import { DEFAULT_SUBNET } from '../../../orchestrator/isolation/netns.ts';
import { Ipam, parseSubnet } from '../../../orchestrator/isolation/ipam.ts';
import { Evaluator } from '../../../shared/netpol/evaluate.ts';
import type { NetworkPolicyObject, PodInfo } from '../../../shared/netpol/types.ts';
import { NODE, runToEnd, tempDir } from '../../helpers/process.ts';

const pod = (namespace: string, name: string, labels: Record<string, string>, ip?: string): PodInfo => ({
  namespace,
  name,
  labels,
  ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
  ...(ip ? { ip } : {}),
});

describe('the evaluator answers in four', () => {
  const a = pod('x', 'a', { pod: 'a' });
  const b = pod('x', 'b', { pod: 'b' });
  const c = pod('x', 'c', { pod: 'c' }, '10.1.0.7');
  const policies: NetworkPolicyObject[] = [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'cidr', namespace: 'x' },
      spec: {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '{{ip x/c}}/8', except: ['{{ip x/c}}/32'] } }] }],
      },
    },
  ];
  const ev = new Evaluator({ namespaces: [{ name: 'x', labels: {} }], pods: [a, b, c] }, policies);

  it('allowed, blocked, not applicable (loopback, an undeclared port), undecided naming the missing address', () => {
    expect(ev.answer({ from: b, to: a, port: 80, protocol: 'TCP' }).answer).toEqual({ answer: 'allowed' });
    expect(ev.answer({ from: a, to: c, port: 80, protocol: 'TCP' }).answer).toEqual({ answer: 'blocked' });
    expect(ev.answer({ from: a, to: a, port: 80, protocol: 'TCP' }).answer).toMatchObject({
      answer: 'not applicable',
      why: expect.stringContaining('loopback'),
    });
    expect(ev.answer({ from: b, to: a, port: 81, protocol: 'TCP' }).answer).toEqual({ answer: 'not applicable', why: 'x/a declares no port 81/TCP' });
    const { verdict, answer } = ev.answer({ from: a, to: b, port: 80, protocol: 'TCP' });
    expect(verdict.allowed).toBeNull(); // the three-valued verdict is unchanged
    expect(answer).toEqual({ answer: 'undecided', missing: ['x/b'], why: 'depends on the address of x/b, which is assigned at run time' });
  });
});

const CIDR_EXCEPT_NAME = 'k8s-e2e/tcp-35-egress-cidr-except';

describe('deterministic addressing', () => {
  it('the scenario pods take the subnet from its third address, in their order; the bundled default subnet is the one assumed', () => {
    expect(RUN_SUBNET).toBe(DEFAULT_SUBNET);
    expect([...plannedAddresses([{ id: 'x/a' }, { id: 'x/b' }, { id: 'y/a' }])]).toEqual([
      ['x/a', '10.213.0.2'],
      ['x/b', '10.213.0.3'],
      ['y/a', '10.213.0.4'],
    ]);
    expect(plannedAddresses([{ id: 'x/a' }], '10.214.5.0/24').get('x/a')).toBe('10.214.5.2');
    expect(() =>
      plannedAddresses(
        Array.from({ length: 6 }, (_, i) => ({ id: `x/p${i}` })),
        '10.0.0.0/29',
      ),
    ).toThrow(/6 pods do not fit in 10.0.0.0\/29/);
  });

  it("an isolated deploy plan asks for each pod's planned address (app label starmap.address); the loopback plan does not", () => {
    const s = loadScenario(CIDR_EXCEPT_NAME);
    const addresses = plannedAddresses(s.pods);
    const programs = { probe: ['probe'], collector: ['collector'] };
    const labels = (isolated: boolean) =>
      planApps(s, programs, { isolated, addresses }, () => 'f').map((a) => (a.definition.labels as Record<string, string>)['starmap.address']);
    expect(labels(true)).toEqual(s.pods.map((p) => addresses.get(p.id)));
    expect(labels(false).every((l) => l === undefined)).toBe(true);
  });

  it('the IPAM hands out the address a task asks for when it is free, else the next one', () => {
    const ipam = new Ipam(parseSubnet('10.214.5.0/24'));
    expect(ipam.allocate('t1', '10.214.5.9').ip).toBe('10.214.5.9');
    expect(ipam.allocate('t2', '10.214.5.9').ip).toBe('10.214.5.2'); // taken: round-robin
    expect(ipam.allocate('t3', '10.214.5.1').ip).toBe('10.214.5.3'); // the gateway is never a task's
    expect(ipam.allocate('t4', '10.99.0.5').ip).toBe('10.214.5.4'); // outside the subnet
    expect(ipam.allocate('t1', '10.214.5.50').ip).toBe('10.214.5.9'); // the same task keeps its own
  });
});

const CIDR_EXCEPT = CIDR_EXCEPT_NAME;

describe('scenario check decides address-dependent cells', () => {
  it('with the addresses a run assigns: no cell of the ipBlock scenario is left undecided, and the addresses are said', () => {
    const s = loadScenario(CIDR_EXCEPT);
    const r = checkScenario(s);
    expect(r).toMatchObject({ ok: true, undecided: [] });
    expect(r.text).toContain('addresses used for ipBlocks: x/a 10.213.0.2, x/b 10.213.0.3, x/c 10.213.0.4,');
    const rows = r.text.split('\n').filter((l) => /^[xyz]\/[abc] /.test(l));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.join('\n')).not.toContain('?');
  });

  it('without addresses every cell that depends on one is listed with the missing fact', () => {
    const r = checkScenario(loadScenario(CIDR_EXCEPT), { ips: new Map() });
    expect(r.ok).toBe(true);
    expect(r.undecided).toHaveLength(32); // x/a's egress to the 8 other pods, ports 80 and 81, TCP and UDP
    expect(r.undecided).toContain(
      'step 1 should enforce except clause while egress access to server in CIDR block: x/a -> x/c 80/TCP: undecided: depends on the addresses of x/b, x/c, which are assigned at run time',
    );
    expect(r.text).toContain(`${CIDR_EXCEPT.split('/')[1]}: UNDECIDED: 32 cells depend on addresses not known`);
  });

  it('the CLI: undecided exits 3 (0 with --allow-undecided); a mistake on an address-dependent cell is caught before any run (exit 1); --report-html is a run page, computed only', async () => {
    const undecided = await runToEnd(NODE, ['scenarios/main.ts', 'check', CIDR_EXCEPT, '--addresses=unknown']);
    expect(undecided.output).toContain('x/a -> x/b 80/TCP: undecided: depends on the address of x/b, which is assigned at run time');
    expect(undecided.code).toBe(3);
    expect((await runToEnd(NODE, ['scenarios/main.ts', 'check', CIDR_EXCEPT, '--addresses=unknown', '--allow-undecided'])).code).toBe(0);
    // --ip decides them as well.
    const given = await runToEnd(NODE, [
      'scenarios/main.ts',
      'check',
      CIDR_EXCEPT,
      '--addresses=unknown',
      ...['a', 'b', 'c'].flatMap((p, i) => ['--ip', `x/${p}=10.9.0.${i + 2}`]),
      ...['y', 'z'].flatMap((ns, j) => ['a', 'b', 'c'].flatMap((p, i) => ['--ip', `${ns}/${p}=10.9.${j + 1}.${i + 2}`])),
    ]);
    expect(given.code, given.output).toBe(0);
    // A deliberate mistake on a cell that depends on x/b's address: x/a -> x/c said blocked.
    const dir = tempDir('starmap-check-');
    const file = join(dir, 'wrong.yaml');
    const text = readFileSync(join('scenarios', 'builtin', `${CIDR_EXCEPT}.yaml`), 'utf8').replace('x/a  -    X    .', 'x/a  -    X    X');
    writeFileSync(file, text);
    const wrong = await runToEnd(NODE, ['scenarios/main.ts', 'check', file]);
    expect(wrong.output).toContain('intended != computed: x/a -> x/c 80/TCP: intended blocked, the policies say allowed');
    expect(wrong.code).toBe(1);
    const html = join(dir, 'check.html');
    const page = await runToEnd(NODE, ['scenarios/main.ts', 'check', CIDR_EXCEPT, `--report-html=${html}`]);
    expect(page.code).toBe(0);
    const doc = readFileSync(html, 'utf8');
    expect(doc).toContain('COMPUTED ONLY');
    expect(doc).toContain('10.213.0.3');
    expect(doc).not.toContain('>PASS<');
  }, 60_000);
});

describe('scenario explain', () => {
  it('shows the addresses it used and the except that excluded one', () => {
    const text = explainConnection(loadScenario(CIDR_EXCEPT), { step: '1', from: 'x/a', to: 'x/b:80/TCP' });
    expect(text).toContain('x/a -> x/b 80/TCP: blocked');
    expect(text).toContain('  addresses used: x/a 10.213.0.2, x/b 10.213.0.3');
    expect(text).toContain(
      '  x/allow-client-a-via-cidr-egress-rule egress rule 0 peer 0 ipBlock 10.213.0.3/4 except 10.213.0.3/32: 10.213.0.3 (x/b) is inside 10.213.0.3/4 but excluded by except 10.213.0.3/32',
    );
    const given = explainConnection(loadScenario(CIDR_EXCEPT), { step: '1', from: 'x/a', to: 'x/c:80/TCP', ips: ['x/c=10.213.0.99'] });
    expect(given).toContain('x/a -> x/c 80/TCP: allowed');
    expect(given).toContain('addresses used: x/a 10.213.0.2, x/c 10.213.0.99'); // --ip over the run's
    expect(given).toContain('ipBlock 10.213.0.3/4 except 10.213.0.3/32: holds 10.213.0.99 (x/c)');
    const unknown = explainConnection(loadScenario(CIDR_EXCEPT), { step: '1', from: 'x/a', to: 'x/c:80/TCP', addresses: 'unknown' });
    expect(unknown).toContain('x/a -> x/c 80/TCP: undecided (depends on the addresses of x/b, x/c, which are assigned at run time)');
  });

  it('an unknown pod is unknown with the nearest names, with or without a port; a bad port is a bad port', () => {
    const stars = loadScenario('stars');
    expect(() => explainConnection(stars, { step: '1', from: 'C', to: 'stars/frontnd:80/TCP' })).toThrow(
      /^--to: unknown pod "stars\/frontnd" \(nearest: stars\/frontend\)$/,
    );
    expect(() => explainConnection(stars, { step: '1', from: 'C', to: 'stars/frontnd:http' })).toThrow(
      /^--to: unknown pod "stars\/frontnd" \(nearest: stars\/frontend\)$/,
    );
    expect(() => explainConnection(stars, { step: '1', from: 'C', to: 'stars/frontend:80/xyz' })).toThrow(/got the port "80\/xyz"/);
    expect(() => explainConnection(stars, { step: '1', from: 'C', to: 'stars/frontend:90000/TCP' })).toThrow(/port 90000 is not between 1 and 65535/);
  });
});

describe('isolationMissing', () => {
  it.runIf(existsSync('/usr/sbin/nft'))('finds /usr/sbin/nft with a PATH without /usr/sbin (where Debian puts it)', () => {
    expect(findCommand('nft', '/nonexistent:/usr/bin')).toBe('/usr/sbin/nft');
    expect(isolationMissing({ uid: 0, path: '/nonexistent' })).toBeUndefined();
  });

  it('without root it says so and the one command that fixes it', () => {
    const before = process.env.npm_lifecycle_event;
    process.env.npm_lifecycle_event = 'start';
    try {
      expect(isolationGap({ uid: 1000, path: '/nonexistent' })).toMatchObject({
        why: expect.stringMatching(/^it needs root/),
        fix: expect.stringMatching(/sudo npm start$/),
      });
    } finally {
      if (before === undefined) delete process.env.npm_lifecycle_event;
      else process.env.npm_lifecycle_event = before;
    }
    expect(findCommand('no-such-command-here', '/nonexistent')).toBeUndefined();
  });
});
