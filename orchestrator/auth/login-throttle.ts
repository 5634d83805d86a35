// Who may try a password (or a service-account login token) right now. Three limits, each a
// LockoutLimiter (free failures, then a doubling lockout):
// - per (account, client address): the owner's guesses and a stranger's are counted apart, so a
//   stranger who keeps failing against `admin` locks only himself out, never the owner;
// - per client address, across accounts: one address cannot spray guesses over many accounts;
// - per account, across every address that has not logged into that account before: many
//   addresses (a botnet, an IPv6 range) together still get only a bounded number of guesses, while
//   addresses that proved they know the secret keep getting in.
// Addresses are counted per host: IPv4-mapped IPv6 as IPv4, IPv6 by its /64 (one host usually owns
// a whole /64, so rotating through it must not buy fresh attempts).
// Every map is bounded (entries forgotten after an hour without failures, oldest dropped first), so
// memory stays bounded whatever the number of addresses and uids; a locked attempt costs no hash.
import { isIPv6 } from 'node:net';
import { LockoutLimiter, type LockoutOptions } from './rate-limit.ts';

export interface LoginThrottleOptions {
  /** Per (account, client address). Default: 5 free failures. */
  pair?: Partial<LockoutOptions>;
  /** Per client address across accounts. Default: 20 free failures. */
  client?: Partial<LockoutOptions>;
  /** Per account across addresses it does not trust. Default: 50 free failures. */
  account?: Partial<LockoutOptions>;
  /** Addresses remembered per account after a successful login (default 16, most recent kept). */
  trustedPerAccount?: number;
  /** How long a successful login keeps an address trusted (default 30 days). */
  trustForMs?: number;
  /** Accounts with trusted addresses remembered (default 10,000, least recent dropped). */
  maxTrustedAccounts?: number;
}

const BASE: LockoutOptions = { freeFailures: 5, baseLockoutMs: 1000, maxLockoutMs: 15 * 60_000, forgetAfterMs: 60 * 60_000, maxEntries: 100_000 };

/** The part of a client address that names one host: a.b.c.d, or the first four IPv6 groups. */
export function clientKey(address: string): string {
  const a = address
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  if (!isIPv6(a)) return a;
  const [head = '', tail = ''] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = a.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

export class LoginThrottle {
  readonly #pair: LockoutLimiter;
  readonly #client: LockoutLimiter;
  readonly #account: LockoutLimiter;
  readonly #trusted = new Map<string, Map<string, number>>();
  readonly #now: () => number;
  readonly #perAccount: number;
  readonly #trustFor: number;
  readonly #maxAccounts: number;

  constructor(opts: LoginThrottleOptions, now: () => number) {
    this.#now = now;
    this.#pair = new LockoutLimiter({ ...BASE, ...opts.pair }, now);
    this.#client = new LockoutLimiter({ ...BASE, freeFailures: 20, ...opts.client }, now);
    this.#account = new LockoutLimiter({ ...BASE, freeFailures: 50, ...opts.account }, now);
    this.#perAccount = opts.trustedPerAccount ?? 16;
    this.#trustFor = opts.trustForMs ?? 30 * 24 * 3600_000;
    this.#maxAccounts = opts.maxTrustedAccounts ?? 10_000;
  }

  #isTrusted(uid: string, client: string): boolean {
    const at = this.#trusted.get(uid)?.get(client);
    return at !== undefined && this.#now() - at <= this.#trustFor;
  }

  /** Milliseconds this client must still wait before trying this account (0: go ahead). */
  lockedFor(uid: string, address: string): number {
    const client = clientKey(address);
    const pair = this.#pair.lockedFor(`${uid}\0${client}`);
    const perClient = this.#client.lockedFor(client);
    const perAccount = this.#isTrusted(uid, client) ? 0 : this.#account.lockedFor(uid);
    return Math.max(pair, perClient, perAccount);
  }

  failed(uid: string, address: string): void {
    const client = clientKey(address);
    this.#pair.fail(`${uid}\0${client}`);
    this.#client.fail(client);
    // The owner mistyping from a known address is no attack on the account.
    if (!this.#isTrusted(uid, client)) this.#account.fail(uid);
  }

  succeeded(uid: string, address: string): void {
    const client = clientKey(address);
    this.#pair.succeed(`${uid}\0${client}`);
    let seen = this.#trusted.get(uid);
    if (seen)
      this.#trusted.delete(uid); // re-inserted below: most recent last
    else seen = new Map();
    seen.delete(client);
    seen.set(client, this.#now());
    while (seen.size > this.#perAccount) seen.delete(seen.keys().next().value!);
    this.#trusted.set(uid, seen);
    while (this.#trusted.size > this.#maxAccounts) this.#trusted.delete(this.#trusted.keys().next().value!);
  }

  /** Forgets what was trusted for an account (deleted: a new account of that uid starts afresh). */
  forget(uid: string): void {
    this.#trusted.delete(uid);
  }
}
