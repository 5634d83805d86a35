// Names of everything the isolation creates on the machine. Every name starts with the instance
// prefix, so that cleanupAll(prefix) finds all of it after a crash and nothing else.
//   bridge            <prefix>-br          (Linux interface names: at most 15 characters)
//   host veth end     <prefix>-v<index>    (index = the task address' offset in the subnet)
//   veth peer         <prefix>-p<index>    (created inside the namespace, renamed eth0 there)
//   task namespace    <prefix>-t<index>
//   host nft table    inet <prefix>_guard
//   hosts file        /etc/netns/<prefix>-t<index>/hosts (ip netns exec bind-mounts it on /etc/hosts)

export const PREFIX_PATTERN = /^[a-z][a-z0-9]{1,5}$/;

export function checkPrefix(prefix: string): string {
  if (!PREFIX_PATTERN.test(prefix))
    throw new Error(`invalid isolation prefix ${JSON.stringify(prefix)}: 2 to 6 lowercase letters or digits, starting with a letter`);
  return prefix;
}

export interface Names {
  bridge: string;
  guardTable: string;
  netns(index: number): string;
  hostVeth(index: number): string;
  peerVeth(index: number): string;
}

export function namesFor(prefix: string): Names {
  checkPrefix(prefix);
  const idx = (i: number): string => {
    if (!Number.isInteger(i) || i < 0 || i > 9_999_999) throw new Error(`invalid address index ${i}`);
    return String(i);
  };
  return {
    bridge: `${prefix}-br`,
    guardTable: `${prefix}_guard`,
    netns: (i) => `${prefix}-t${idx(i)}`,
    hostVeth: (i) => `${prefix}-v${idx(i)}`,
    peerVeth: (i) => `${prefix}-p${idx(i)}`,
  };
}

/** Does a namespace or link name belong to this prefix? ("sm" must not match "sm2-…"). */
export function ownedName(prefix: string, name: string): boolean {
  return name.startsWith(`${prefix}-`);
}

/** Does an nftables table name belong to this prefix? (`<prefix>_guard`, see above) */
export function ownedTable(prefix: string, name: string): boolean {
  return name.startsWith(`${prefix}_`);
}
