// Listen addresses of the admin listener: "host:port" text as an operator writes it, the
// {host, port} form the server binds, and whether an address is reachable only from this
// machine (which decides whether running without a token deserves a warning).
import { isIP, isIPv4, isIPv6 } from "node:net";
import type { ListenAddress } from "./types.js";

/** A DNS name: dot-separated labels of letters, digits and inner '-'. */
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The form every listen error asks for, so the operator sees a correct example. */
export const LISTEN_FORM = `"host:port" (e.g. "127.0.0.1:9464", "[::1]:9464", "localhost:0"; port 0 to 65535, 0 picks a free one)`;

/**
 * Reads "host:port" (an IPv6 host in brackets: "[::1]:9464").
 *
 * @returns the address (an IPv6 host without its brackets, as `net.Server.listen` takes it),
 *   or a problem phrased to follow the key's name in a config message.
 */
export function parseListen(text: string): ListenAddress | { readonly problem: string } {
  const bracketed = /^\[([^\]]*)\]:([^:]*)$/.exec(text);
  const plain = bracketed ? null : /^([^:[\]]*):([^:]*)$/.exec(text);
  const match = bracketed ?? plain;
  if (!match) {
    const hint = isIPv6(text.replace(/:\d+$/, "")) ? "; put an IPv6 address in brackets" : "";
    return { problem: `must be ${LISTEN_FORM}${hint}` };
  }
  const host = match[1] as string;
  const portText = match[2] as string;
  const hostProblem = bracketed ? (isIPv6(host) ? undefined : "is not an IPv6 address, yet is in brackets") : checkHost(host);
  if (hostProblem) return { problem: `has host "${host}", which ${hostProblem}; it must be ${LISTEN_FORM}` };
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 0 && port <= 65535)) return { problem: `has port "${portText}", which is not an integer from 0 to 65535; it must be ${LISTEN_FORM}` };
  return { host, port };
}

/**
 * Why `host` cannot be bound as given (an IPv4 or IPv6 address without brackets, or a DNS
 * name), phrased to follow "which"; undefined when it can.
 */
export function checkHost(host: string): string | undefined {
  if (host === "") return "is empty";
  if (isIP(host) !== 0 || HOSTNAME.test(host)) return undefined;
  return "is neither an IP address nor a host name";
}

/** "host:port", with brackets around an IPv6 host: the form the config and URLs use. */
export function formatListen(address: ListenAddress): string {
  return `${isIPv6(address.host) ? `[${address.host}]` : address.host}:${address.port}`;
}

/**
 * Whether only this machine can reach `host`: 127.0.0.0/8, ::1 (also IPv4-mapped) or
 * "localhost". Unspecified addresses (0.0.0.0, ::) listen on every interface, so they are not.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIPv4(h)) return h.startsWith("127.");
  if (isIPv6(h)) {
    // The WHATWG URL parser writes an IPv6 address in its one canonical form: "[::1]",
    // "[::ffff:7f00:1]" for IPv4-mapped 127.0.0.1.
    // A zone index ("fe80::1%eth0") does not parse, and is never loopback.
    if (!URL.canParse(`http://[${h}]/`)) return false;
    const canonical = new URL(`http://[${h}]/`).hostname;
    if (canonical === "[::1]") return true;
    const mapped = /^\[::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}\]$/.exec(canonical)?.[1];
    return mapped !== undefined && parseInt(mapped, 16) >> 8 === 127;
  }
  return false;
}
