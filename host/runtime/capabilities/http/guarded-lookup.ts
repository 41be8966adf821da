// The DNS lookup of a plugin's connections, with the address check inside it: the socket
// connects to an address this function handed over, so there is no window between a check and
// the connect for a rebinding name to change its answer. (IP literals skip lookup altogether;
// guest-request checks those.)
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import type { GrantRules } from "./grant-rules.js";
import { addressDenied } from "./http-errors.js";

/**
 * A `lookup` for `net.connect` / `tls.connect` that keeps only the addresses the grant allows
 * and fails with PERMISSION_DENIED when none is left.
 */
export function guardedLookup(rules: GrantRules): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, "", 0);
      const allowed = addresses.filter((a) => rules.addresses.allows(a.address));
      if (allowed.length === 0)
        return callback(
          addressDenied(
            rules,
            hostname,
            addresses.map((a) => a.address),
          ),
          "",
          0,
        );
      if (options.all) return callback(null, allowed);
      const first = allowed[0]!;
      callback(null, first.address, first.family);
    });
  };
}
