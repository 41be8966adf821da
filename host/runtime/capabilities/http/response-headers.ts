import type { IncomingHttpHeaders } from "node:http";

/**
 * undici's header object (lowercase names, repeats as arrays) as the pairs a guest reads:
 * one pair per `set-cookie` (cookies cannot be joined with commas), other repeats joined by ", ".
 */
export function headerPairs(headers: IncomingHttpHeaders): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name in headers) {
    const value = headers[name];
    if (typeof value === "string") pairs.push([name, value]);
    else if (value === undefined) continue;
    else if (name === "set-cookie") for (const cookie of value) pairs.push([name, cookie]);
    else pairs.push([name, value.join(", ")]);
  }
  return pairs;
}
