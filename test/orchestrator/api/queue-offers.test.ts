// /v2/queue's offer statistics (Marathon 1.4's processedOffersSummary and embed=lastUnusedOffers):
// an app whose hostname constraint allows no more tasks here declines the host for
// UnfulfilledConstraint, one whose required host port is taken for InsufficientPorts, each reason
// counted in Marathon's funnel order.
/* eslint-disable @typescript-eslint/no-explicit-any */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, stopAll } from '../../helpers/process.ts';
import { startOrchestrator, type StartedOrchestrator } from '../../helpers/orchestrator.ts';
import { waitFor } from '../../helpers/wait.ts';

let o: StartedOrchestrator;
beforeAll(async () => {
  o = await startOrchestrator(['--task-port-min=36200', '--task-port-max=36299']);
}, 30_000);
afterAll(async () => {
  await o?.proc.stop('SIGTERM');
  await stopAll();
});

const FUNNEL = [
  'UnfulfilledRole',
  'UnfulfilledConstraint',
  'NoCorrespondingReservationFound',
  'InsufficientCpus',
  'InsufficientMemory',
  'InsufficientDisk',
  'InsufficientGpus',
  'InsufficientPorts',
];

/** Marathon's declinedOfferSteps for `processed` offers of which `declined` were declined for `reason`. */
function steps(processed: number, reason: string, declined: number): { reason: string; declined: number; processed: number }[] {
  const at = FUNNEL.indexOf(reason);
  return FUNNEL.map((r, i) => ({ reason: r, declined: r === reason ? declined : 0, processed: i <= at ? processed : processed - declined }));
}

const entry = async (id: string, query = '') => ((await o.call('GET', `/v2/queue${query}`)).body.queue as any[]).find((e) => e.app.id === id);

/** The app's queue entry once `n` offers were declined. */
const declinedAtLeast = (id: string, n: number) =>
  waitFor(
    async () => {
      const e = await entry(id);
      return e && e.processedOffersSummary.unusedOffersCount >= n ? e : undefined;
    },
    { timeoutMs: 10_000, message: `${id}: ${n} declined offers` },
  );

describe('/v2/queue offer statistics', () => {
  it('an app its hostname constraint keeps from placing more tasks: UnfulfilledConstraint', async () => {
    const id = '/queue-offers/unique';
    expect((await o.call('POST', '/v2/apps', { id, cmd: 'exec sleep 1000', instances: 2, constraints: [['hostname', 'UNIQUE']] })).status).toBe(201);
    const e = await declinedAtLeast(id, 2);
    expect(e.count).toBe(1);
    const s = e.processedOffersSummary;
    // The first offer was used (one task placed), every later one declined.
    expect(s.processedOffersCount).toBe(s.unusedOffersCount + 1);
    expect(s).toEqual({
      processedOffersCount: s.processedOffersCount,
      unusedOffersCount: s.unusedOffersCount,
      lastUnusedOfferAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      lastUsedOfferAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      rejectSummaryLastOffers: steps(1, 'UnfulfilledConstraint', 1),
      rejectSummaryLaunchAttempt: steps(s.processedOffersCount, 'UnfulfilledConstraint', s.unusedOffersCount),
    });
    expect(e).not.toHaveProperty('lastUnusedOffers');

    const embedded = await entry(id, '?embed=lastUnusedOffers');
    expect(embedded.lastUnusedOffers).toEqual([
      {
        offer: {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          hostname: '127.0.0.1',
          agentId: expect.any(String),
          resources: [{ name: 'ports', role: '*', ranges: [{ begin: 36200, end: 36299 }] }],
          attributes: [],
        },
        reason: ['UnfulfilledConstraint'],
        timestamp: embedded.processedOffersSummary.lastUnusedOfferAt,
      },
    ]);
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 30_000);

  it('an app whose required host port is taken: InsufficientPorts; once free, it launches and leaves the queue', async () => {
    const port = await freePort();
    const holder = '/queue-offers/holder';
    const id = '/queue-offers/same-port';
    const onPort = (appId: string) => ({ id: appId, cmd: 'exec sleep 1000', instances: 1, requirePorts: true, portDefinitions: [{ port }] });
    expect((await o.call('POST', '/v2/apps', onPort(holder))).status).toBe(201);
    await waitFor(async () => (await o.call('GET', `/v2/apps${holder}`)).body.app.tasksRunning === 1, { timeoutMs: 10_000, message: 'holder running' });
    expect((await o.call('POST', '/v2/apps', onPort(id))).status).toBe(201);
    const e = await declinedAtLeast(id, 2);
    const s = e.processedOffersSummary;
    expect(s.processedOffersCount).toBe(s.unusedOffersCount);
    expect(s).not.toHaveProperty('lastUsedOfferAt');
    expect(s.rejectSummaryLastOffers).toEqual(steps(1, 'InsufficientPorts', 1));
    expect(s.rejectSummaryLaunchAttempt).toEqual(steps(s.processedOffersCount, 'InsufficientPorts', s.unusedOffersCount));
    expect((await entry(id, '?embed=lastUnusedOffers')).lastUnusedOffers.map((u: any) => u.reason)).toEqual([['InsufficientPorts']]);

    await o.call('DELETE', `/v2/apps${holder}?force=true`);
    await waitFor(async () => (await o.call('GET', `/v2/apps${id}`)).body.app.tasksRunning === 1, { timeoutMs: 10_000, message: 'second app running' });
    expect(await entry(id)).toBeUndefined();
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 30_000);

  it('an app held by its launch back-off: no offer processed, every reason at 0', async () => {
    // An app that cannot start because of its back-off: no offer is processed for it.
    const id = '/queue-offers/crashy';
    expect((await o.call('POST', '/v2/apps', { id, cmd: 'exit 1', instances: 1, backoffSeconds: 600 })).status).toBe(201);
    const e = await waitFor(
      async () => {
        const x = await entry(id);
        return x && x.delay.overdue === false ? x : undefined;
      },
      { timeoutMs: 10_000, message: 'crashy app delayed' },
    );
    expect(e.processedOffersSummary.rejectSummaryLastOffers).toEqual(steps(0, 'UnfulfilledRole', 0));
    expect(e.processedOffersSummary.unusedOffersCount).toBe(0);
    await o.call('DELETE', `/v2/apps${id}?force=true`);
  }, 30_000);
});
