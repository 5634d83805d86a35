// Offer statistics of the launch queue (Marathon 1.4's OfferMatchStatisticsActor and the
// processedOffersSummary of QueueInfoConversion). Starmap has no Mesos offers: its one host is
// "offered" to an app each time a reconcile pass tries to launch tasks of it (not while its launch
// is delayed, as Marathon matches no offer for a delayed app). A pass that launches a task used
// the offer; one that cannot place a task declined it, for the reason the launcher knows:
//   hostname constraint (UNIQUE, MAX_PER, CLUSTER, LIKE, UNLIKE) full or unmet → UnfulfilledConstraint
//   a required host port taken, or too few free ports in the task port range → InsufficientPorts
// Nothing else keeps a task from starting here (cpus, mem, disk, gpus and roles are not
// accounted on one machine), so the other reasons stay at 0. The statistics are of one launch
// attempt: they are forgotten once a pass launches every task the app waited for.
import { randomUUID } from 'node:crypto';

/** Marathon 1.4's NoOfferMatchReason.reasonFunnel (v1.4.0 to v1.4.13): a declined offer counts for its first reason in this order. */
export const REASON_FUNNEL = [
  'UnfulfilledRole',
  'UnfulfilledConstraint',
  'NoCorrespondingReservationFound',
  'InsufficientCpus',
  'InsufficientMemory',
  'InsufficientDisk',
  'InsufficientGpus',
  'InsufficientPorts',
] as const;

export type DeclineReason = (typeof REASON_FUNNEL)[number];

/** An offer the app could not use (Marathon's OfferMatchResult.NoMatch). */
export interface UnusedOffer {
  offerId: string;
  reasons: DeclineReason[];
  timestamp: string;
}

/** One app's statistics for its current launch attempt. */
export interface OfferStats {
  processed: number;
  unused: number;
  /** Declined offers by their first reason in the funnel. */
  declined: Partial<Record<DeclineReason, number>>;
  lastUsedAt?: string;
  /** The last declined offer of the one host (Marathon keeps the last one per agent). */
  lastUnused?: UnusedOffer;
}

/** What the host offers, as lastUnusedOffers shows it: its id, and the task port range the launcher allocates from. */
export interface OfferedHost {
  hostname: string;
  agentId: string;
  portMin: number;
  portMax: number;
}

export class OfferStatistics {
  readonly #byApp = new Map<string, OfferStats>();

  of(appId: string): OfferStats | undefined {
    return this.#byApp.get(appId);
  }

  #stats(appId: string): OfferStats {
    let s = this.#byApp.get(appId);
    if (!s) this.#byApp.set(appId, (s = { processed: 0, unused: 0, declined: {} }));
    return s;
  }

  /** A pass launched at least one task of the app. */
  used(appId: string): void {
    const s = this.#stats(appId);
    s.processed++;
    s.lastUsedAt = new Date().toISOString();
  }

  /** A pass could place no task of the app. */
  declined(appId: string, reasons: DeclineReason[]): void {
    const s = this.#stats(appId);
    s.processed++;
    s.unused++;
    const first = REASON_FUNNEL.find((r) => reasons.includes(r));
    if (first) s.declined[first] = (s.declined[first] ?? 0) + 1;
    s.lastUnused = { offerId: randomUUID(), reasons, timestamp: new Date().toISOString() };
  }

  /** The launch attempt ended (every task the app waited for launched) or the app went. */
  finished(appId: string): void {
    this.#byApp.delete(appId);
  }
}

/**
 * Marathon 1.4's declinedOfferSteps: one entry per reason of the funnel, `processed` the offers
 * that reached that step and `declined` those it declined (the rest go on to the next step).
 */
function funnel(processed: number, declined: Partial<Record<DeclineReason, number>>): { reason: string; declined: number; processed: number }[] {
  let left = processed;
  return REASON_FUNNEL.map((reason) => {
    const n = declined[reason] ?? 0;
    const step = { reason, declined: n, processed: left };
    left -= n;
    return step;
  });
}

/** The queue entry's processedOffersSummary. */
export function processedOffersSummary(s: OfferStats | undefined): Record<string, unknown> {
  const last = s?.lastUnused;
  const lastOffers: Partial<Record<DeclineReason, number>> = {};
  const first = last && REASON_FUNNEL.find((r) => last.reasons.includes(r));
  if (first) lastOffers[first] = 1;
  return {
    processedOffersCount: s?.processed ?? 0,
    unusedOffersCount: s?.unused ?? 0,
    ...(last ? { lastUnusedOfferAt: last.timestamp } : {}),
    ...(s?.lastUsedAt ? { lastUsedOfferAt: s.lastUsedAt } : {}),
    // Over the last declined offer of each host: here the one host's.
    rejectSummaryLastOffers: funnel(last ? 1 : 0, lastOffers),
    rejectSummaryLaunchAttempt: funnel(s?.processed ?? 0, s?.declined ?? {}),
  };
}

/** embed=lastUnusedOffers: the host's last declined offer, shaped as Marathon's UnusedOffer. */
export function lastUnusedOffers(s: OfferStats | undefined, host: OfferedHost): Record<string, unknown>[] {
  const last = s?.lastUnused;
  if (!last) return [];
  return [
    {
      offer: {
        id: last.offerId,
        hostname: host.hostname,
        agentId: host.agentId,
        resources: [{ name: 'ports', role: '*', ranges: [{ begin: host.portMin, end: host.portMax }] }],
        attributes: [],
      },
      reason: last.reasons,
      timestamp: last.timestamp,
    },
  ];
}
