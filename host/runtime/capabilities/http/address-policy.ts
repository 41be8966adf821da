// Which addresses a plugin may connect to: public ones, plus those in its
// `allow_private_ranges`. Checked on the address actually connected to (see guarded-lookup),
// so a name that resolves to the host's own admin port or to a cloud metadata address
// (169.254.169.254) is refused however the allow-list admitted the name.
import { BlockList, isIP } from "node:net";
import { embeddedIpv4 } from "./embedded-ipv4.js";
import { tomlList } from "./toml-list.js";

/** Not globally reachable (RFC 6890 and successors), by family. */
const NON_PUBLIC: Record<"ipv4" | "ipv6", readonly string[]> = {
  ipv4: [
    "0.0.0.0/8", // unspecified, "this network"
    "10.0.0.0/8",
    "100.64.0.0/10", // CGNAT
    "127.0.0.0/8",
    "169.254.0.0/16", // link-local, cloud metadata
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4", // multicast
    "240.0.0.0/4", // reserved, broadcast
  ],
  ipv6: [
    "::/128",
    "::1/128",
    "100::/64", // discard
    "64:ff9b:1::/48", // local-use NAT64
    "2001::/32", // Teredo: its client address is obfuscated, so it cannot be judged
    "2001:2::/48",
    "2001:10::/28",
    "2001:db8::/32",
    "fc00::/7", // unique local
    "fe80::/10", // link-local
    "fec0::/10", // site-local (deprecated)
    "ff00::/8", // multicast
  ],
};

const nonPublic = blockListOf([...NON_PUBLIC.ipv4, ...NON_PUBLIC.ipv6]);

type Family = "ipv4" | "ipv6";

/**
 * Why `cidr` is not a valid `allow_private_ranges` entry, or undefined when it is: an IPv4 or
 * IPv6 address with a prefix length ("127.0.0.0/8", "fd00::/8"); a bare address means itself.
 */
export function cidrProblem(cidr: string): string | undefined {
  const parsed = parseCidr(cidr);
  return parsed === undefined ? `allow_private_ranges entry ${JSON.stringify(cidr)} is not a CIDR such as "127.0.0.0/8" or "fd00::/8"` : undefined;
}

function parseCidr(cidr: string): { address: string; prefix: number; family: Family } | undefined {
  const [address = "", bits, extra] = cidr.split("/");
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return undefined;
  return { address, prefix, family: version === 4 ? "ipv4" : "ipv6" };
}

function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const parsed = parseCidr(cidr);
    if (parsed === undefined) throw new Error(`not a CIDR: ${JSON.stringify(cidr)}`);
    list.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  return list;
}

/** The compiled `allow_private_ranges` of one grant. */
export class AddressPolicy {
  readonly #allowed: BlockList;

  constructor(readonly allowPrivateRanges: readonly string[]) {
    this.#allowed = blockListOf(allowPrivateRanges);
  }

  /** Whether a connection to `address` (an IP, no brackets) may be made. */
  allows(address: string): boolean {
    const family: Family = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (this.#allowed.check(address, family)) return true;
    if (nonPublic.check(address, family)) return false;
    const inner = family === "ipv6" ? embeddedIpv4(address) : undefined;
    return inner === undefined || this.#allowed.check(inner, "ipv4") || !nonPublic.check(inner, "ipv4");
  }

  /** The list as the operator wrote it, for messages. */
  toString(): string {
    return tomlList(this.allowPrivateRanges);
  }
}
