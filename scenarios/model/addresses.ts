// Deterministic addressing (issue 32): the address every pod of a scenario gets in an isolated run
// of the bundled orchestrator, so that `scenario check` decides the cells that depend on an
// ipBlock with the addresses `scenario run` will use, and both agree. The rule: the scenario's pods
// in their order (as `scenario check` lists them) take the task addresses of the subnet from its
// third address on (the first is the network, the second the gateway): in 10.213.0.0/24 the first
// pod is 10.213.0.2, the next 10.213.0.3, and so on. The runner asks for each address with the app
// label `starmap.address`, which the orchestrator's IPAM honours when the address is free
// (orchestrator/isolation/ipam.ts). Pure.
import { intToIp, parseSubnet, subnetSize } from '../../orchestrator/isolation/ipam.ts';
import type { PodSpec } from './resolve.ts';

/** The bundled orchestrator's task subnet (orchestrator/isolation/netns.ts DEFAULT_SUBNET, tested equal). */
export const RUN_SUBNET = '10.213.0.0/24';

/** pod id (ns/pod) → the address an isolated run in `subnet` gives it; throws when the subnet is too small. */
export function plannedAddresses(pods: readonly Pick<PodSpec, 'id'>[], subnet: string = RUN_SUBNET): Map<string, string> {
  const s = parseSubnet(subnet);
  const usable = subnetSize(s) - 3; // network, gateway, broadcast
  if (pods.length > usable) throw new Error(`${pods.length} pods do not fit in ${s.cidr} (${usable} task addresses)`);
  return new Map(pods.map((p, i) => [p.id, intToIp(s.base + 2 + i)]));
}

/**
 * The pods that did not get the address planned for them, in words (empty: every one did).
 * Externals are left out: the pods know them by their external address, not by the subnet address
 * their namespace also holds, so theirs never "moves".
 */
export function addressMismatches(
  planned: ReadonlyMap<string, string>,
  got: ReadonlyMap<string, string>,
  pods: readonly Pick<PodSpec, 'id' | 'external'>[] = [],
): string[] {
  const externals = new Set(pods.filter((p) => p.external !== undefined).map((p) => p.id));
  return [...planned].filter(([id, ip]) => !externals.has(id) && got.has(id) && got.get(id) !== ip).map(([id, ip]) => `${id} got ${got.get(id)}, not ${ip}`);
}
