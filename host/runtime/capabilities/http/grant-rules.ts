// One plugin's grant compiled once for its client, so a request pays for set look-ups and not
// for parsing patterns, CIDRs and headers again.
import { AddressPolicy } from "./address-policy.js";
import { HostAllowList } from "./host-pattern.js";
import type { HttpGrant } from "./types.js";

/** Shorter header values are not masked on their own: every message would be mangled. */
const MIN_MASKED = 4;

/** The grant of one plugin, ready for checking requests and writing messages. */
export class GrantRules {
  readonly hosts: HostAllowList;
  readonly addresses: AddressPolicy;
  readonly methods: ReadonlySet<string>;
  /** Lowercase names of the grant's headers: a guest may not send its own of these. */
  readonly headerNames: ReadonlySet<string>;
  /** The grant's headers as undici takes them: [name, value, name, value, ...]. */
  readonly headerList: readonly string[];
  readonly #secrets: readonly string[];

  constructor(
    readonly plugin: string,
    readonly grant: HttpGrant,
  ) {
    this.hosts = new HostAllowList(grant.allowedHosts);
    this.addresses = new AddressPolicy(grant.allowPrivateRanges);
    this.methods = new Set(grant.methods);
    const entries = Object.entries(grant.headers);
    this.headerNames = new Set(entries.map(([name]) => name.toLowerCase()));
    this.headerList = entries.flat();
    this.#secrets = entries
      .map(([, value]) => value)
      .filter((v) => v.length >= MIN_MASKED)
      .sort((a, b) => b.length - a.length);
  }

  /**
   * `text` with every grant header value masked: for anything a remote, undici or Node wrote
   * that could quote a request (a cause's message), before it reaches a message or a log.
   */
  scrub(text: string): string {
    let out = text;
    for (const secret of this.#secrets) out = out.split(secret).join("***");
    return out;
  }
}
