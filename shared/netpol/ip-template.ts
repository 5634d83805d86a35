// `{{ip ns/pod}}` in an ipBlock's cidr or except entries (`{{ip x/b}}/32`): replaced by that pod's
// address once it is known, so that a scenario using ipBlock does not depend on which address a
// run happens to hand out. Starmap's extension, not Kubernetes': the runner substitutes the
// addresses before a policy leaves for the orchestrator, and the evaluator substitutes them from
// its cluster model (an address not known yet leaves the block undecided, never matching by luck).
import type { NetworkPolicyObject, NetworkPolicyPeer } from './types.ts';

// The whitespace runs are matched atomically (a lookahead's capture, then the capture itself):
// with plain \s+ and \s* around an empty name, an unclosed `{{ip` followed by n spaces is tried
// n² ways (80,000 spaces took 6.7 s). The name cannot start with whitespace, so nothing is lost.
const TEMPLATE = /\{\{(?=(\s*))\1ip(?=(\s+))\2([^\s{}]*)(?=(\s*))\4\}\}/g;

/** The pods (`ns/pod`) a CIDR text refers to. */
export function templateRefs(text: string): string[] {
  return [...text.matchAll(TEMPLATE)].map((m) => m[3]!);
}

export function hasTemplate(text: string): boolean {
  return templateRefs(text).length > 0;
}

/** The text with every template replaced, or undefined when an address is not known. */
export function substitute(text: string, ipOf: (ref: string) => string | undefined): string | undefined {
  let unknown = false;
  const out = text.replace(TEMPLATE, (...m: string[]) => {
    const ref = m[3]!;
    const ip = ipOf(ref);
    if (ip === undefined) unknown = true;
    return ip ?? '';
  });
  return unknown ? undefined : out;
}

/** Every ipBlock CIDR text of a policy with its JSON pointer, for checks and substitution. */
export function cidrTexts(policy: NetworkPolicyObject): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const peers = (list: NetworkPolicyPeer[] | undefined, base: string) =>
    list?.forEach((peer, p) => {
      if (!peer.ipBlock) return;
      out.push({ path: `${base}/${p}/ipBlock/cidr`, text: peer.ipBlock.cidr });
      peer.ipBlock.except?.forEach((e, i) => out.push({ path: `${base}/${p}/ipBlock/except/${i}`, text: e }));
    });
  policy.spec.ingress?.forEach((r, i) => peers(r.from, `/spec/ingress/${i}/from`));
  policy.spec.egress?.forEach((r, i) => peers(r.to, `/spec/egress/${i}/to`));
  return out;
}

/**
 * A copy of the policy with every template replaced through `ipOf`. Throws naming the pod when an
 * address is not known: a policy must never reach the orchestrator half resolved.
 */
export function resolvePolicy(policy: NetworkPolicyObject, ipOf: (ref: string) => string | undefined): NetworkPolicyObject {
  if (!cidrTexts(policy).some((c) => hasTemplate(c.text))) return policy;
  const copy = structuredClone(policy);
  const fix = (text: string) => {
    const out = substitute(text, ipOf);
    if (out === undefined)
      throw new Error(
        `${policy.metadata.namespace}/${policy.metadata.name}: the address of ${templateRefs(text)
          .filter((r) => ipOf(r) === undefined)
          .join(', ')} is not known`,
      );
    return out;
  };
  const peers = (list: NetworkPolicyPeer[] | undefined) =>
    list?.forEach((peer) => {
      if (!peer.ipBlock) return;
      peer.ipBlock.cidr = fix(peer.ipBlock.cidr);
      if (peer.ipBlock.except) peer.ipBlock.except = peer.ipBlock.except.map(fix);
    });
  copy.spec.ingress?.forEach((r) => peers(r.from));
  copy.spec.egress?.forEach((r) => peers(r.to));
  return copy;
}

/**
 * The text with stand-in addresses, for validating a policy before any address is known: a
 * documentation address of the family its prefix length implies (over 32 bits: IPv6).
 */
export function placeholderFor(text: string): string {
  const prefix = Number(/\/(\d+)\s*$/.exec(text)?.[1] ?? 0);
  return text.replace(TEMPLATE, prefix > 32 ? '2001:db8::1' : '192.0.2.1');
}
