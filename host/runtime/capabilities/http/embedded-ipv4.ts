// IPv6 forms that carry an IPv4 address a packet may end up at: IPv4-mapped (::ffff:a.b.c.d),
// IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002:AABB:CCDD::/48). A check
// that looks only at the IPv6 range would let "::ffff:127.0.0.1" or "64:ff9b::a9fe:a9fe"
// (169.254.169.254 through a NAT64 gateway) through.

/** The IPv4 address inside `ipv6` (no brackets; a zone id is ignored), or undefined. */
export function embeddedIpv4(ipv6: string): string | undefined {
  const g = ipv6Groups(ipv6);
  if (g === undefined) return undefined;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (g[0] === 0x2002) return dotted(g[1]!, g[2]!);
  // ::/128 and ::1 are IPv6's own unspecified and loopback addresses, judged as such.
  if (zeros(0, 5) && (g[5] === 0xffff || (g[5] === 0 && (g[6] !== 0 || g[7]! > 1)))) return dotted(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return dotted(g[6]!, g[7]!);
  return undefined;
}

function dotted(hi: number, lo: number): string {
  return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad allowed), or undefined. */
function ipv6Groups(text: string): number[] | undefined {
  let s = text.split("%")[0]!;
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const part = (h: string | undefined) => (h ? h.split(":").map((x) => parseInt(x, 16)) : []);
  const head = part(halves[0]);
  const tail = part(halves[1]);
  const fill = 8 - head.length - tail.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 1 ? 0 : fill).fill(0), ...tail];
  return groups.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? groups : undefined;
}
