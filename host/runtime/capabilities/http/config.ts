// `[plugins.http]`, the http capability's own table: what a plugin's HTTP requests may reach,
// and their limits. HttpGrant (what the client runs with) and HttpInput (what a config built in
// code gives) are derived from it, so a key is declared once, here.
import { MAX_INPUT_BYTES, MAX_REPLY_BYTES } from "../../../../abi/status.js";
import { defineTable, field, type TableInput, type TableValue } from "../../../../kit/schema.js";
import { firstProblem } from "../../../config/field-rules.js";
import { cidrProblem } from "./address-policy.js";
import { methodProblem } from "./header-rules.js";
import { hostPatternProblem } from "./host-pattern.js";

/** `[plugins.http]`: what a plugin's HTTP requests may reach, and their limits. */
export const HTTP_SCHEMA = defineTable({
  doc: "a plugin's HTTP requests",
  fields: {
    allowedHosts: field.stringList({
      example: ["api.example.com", "*.example.com"],
      // "api.example.com" (exact, case-insensitive) or "*.example.com" (any subdomain at any depth, not
      // the apex); IPv4/IPv6 literals as exact entries ("127.0.0.1", "[::1]" or "::1").
      doc:
        'host[:port] it may reach: exact names or IPs, or "*.domain" for any subdomain; without a port only 80/443, ":*" any port; no other host ' +
        "or port is reached, redirects included",
      check: (list) => (list.length === 0 ? "must name at least one host" : firstProblem(list, hostPatternProblem, "allowed_hosts")),
    }),
    methods: field.stringList({ default: ["GET", "HEAD"], doc: "the methods it may use", check: (list) => firstProblem(list, methodProblem, "methods") }),
    timeoutMs: field.int({ default: 10_000, min: 1, max: 600_000, unit: "ms", doc: "a whole request, body included; also bounded by the call's time limit" }),
    maxRequestBytes: field.int({ default: 1 << 20, min: 0, max: MAX_INPUT_BYTES, unit: "bytes", doc: "the longest request body" }),
    // Capped like a host function's reply: a response is held whole in memory (and, in the worker
    // runtime, copied to the guest's thread), so an operator cannot grant a gigabyte per call.
    maxResponseBytes: field.int({
      default: 1 << 20,
      min: 0,
      max: MAX_REPLY_BYTES,
      unit: "bytes",
      doc: "the longest response body: a longer one is cut off, TOO_LARGE",
    }),
    allowPrivateRanges: field.stringList({
      default: [],
      example: ["127.0.0.0/8"],
      doc: "CIDR ranges it may reach although loopback, private or link-local (else refused, whatever the name resolves to)",
      check: (list) => firstProblem(list, cidrProblem, "allow_private_ranges"),
    }),
    maxRedirects: field.int({ default: 5, min: 0, max: 20, doc: "redirects followed, each to an allowed host" }),
    // Read by the reader: a table of strings, ${ENV} substituted, values never shown.
    headers: field.custom<Readonly<Record<string, string>>, Readonly<Record<string, string>> | undefined>({
      optional: true,
      toml: '{ authorization = "Bearer ${API_TOKEN}" }',
      doc: "[plugins.http.headers]: sent with every request; values never logged",
    }),
  },
});

/**
 * What the operator granted one plugin (`[plugins.http]`), validated by HTTP_SCHEMA (host
 * patterns, CIDRs, methods; headers by headerProblem). Header values are secrets: never logged
 * or echoed in an error.
 */
export type HttpGrant = TableValue<typeof HTTP_SCHEMA>;

/** A `[plugins.http]` table built in code: `allowed_hosts`, the rest defaulted (no headers). */
export type HttpInput = TableInput<typeof HTTP_SCHEMA>;
