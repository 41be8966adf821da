// TLS to a backend's server, the same five fields and the same rules for every backend: the
// fields (declared here once, spread into each backend's `[locking.<name>]` schema), the
// files read once at start (a file that cannot be read, or is not PEM, is a config error naming
// the option and the path), and what a refused handshake says: which side refused, why, and
// which option to look at. A refusal is told apart from an outage by the words TLS_REFUSED
// start it with, so a backend's ping can mark it permanent (a certificate does not fix itself
// by retrying, like a wrong password).
import { readFileSync } from "node:fs";
import { checkServerIdentity, createSecureContext, type ConnectionOptions, type PeerCertificate } from "node:tls";
import { LockhostError } from "./errors.js";
import { field, type FieldSpec, type TableProblem } from "./schema.js";

/** The TLS fields of a backend's table (`tls`, `ca_file`, `cert_file`, `key_file`, `servername`). */
export interface TlsConfig {
  /** Connect over TLS; a backend may also take it from its URL (rediss://, sslmode, https://). */
  readonly tls: boolean;
  /** The CA certificates (PEM) the server's certificate must chain to; empty: the system's. */
  readonly caFile: string;
  /** This host's client certificate (PEM), for a server that asks for one; with keyFile. */
  readonly certFile: string;
  /** The private key (PEM, unencrypted) of certFile. */
  readonly keyFile: string;
  /** The name the server's certificate must carry (and SNI); empty: the host in the URL. */
  readonly servername: string;
}

/**
 * The TLS fields, to spread into a backend's schema.
 * @param impliedBy what else turns TLS on for this backend ("a rediss:// url"), for the docs.
 */
export function tlsFields(impliedBy: string): { readonly [K in keyof TlsConfig]-?: FieldSpec<TlsConfig[K]> } {
  return {
    tls: field.bool({ default: false, doc: `connect over TLS (${impliedBy} implies it)` }),
    caFile: field.string({ default: "", doc: "TLS: CA certificate file (PEM) the server's certificate must chain to; empty: the system's CAs" }),
    certFile: field.string({ default: "", doc: "TLS: client certificate file (PEM), for a server that requires one; with key_file" }),
    keyFile: field.string({ default: "", doc: "TLS: client private key file (PEM, unencrypted), with cert_file" }),
    servername: field.string({ default: "", doc: "TLS: the name the server's certificate must carry (and SNI); empty: the host connected to" }),
  };
}

/**
 * The cross-field rule of the TLS fields: files or a servername need TLS on, and a client
 * certificate needs its key (and the key its certificate). `on` is whether TLS is on, from
 * `tls` or the backend's URL.
 */
export function tlsProblem(c: Partial<TlsConfig>, on: boolean, howToTurnOn: string): TableProblem | undefined {
  if (!on) {
    for (const key of ["caFile", "certFile", "keyFile", "servername"] as const) {
      if ((c[key] ?? "") !== "") return { key, problem: `is set, but TLS is off: set tls = true${howToTurnOn ? ` (or ${howToTurnOn})` : ""}, or remove it` };
    }
  }
  if (((c.certFile ?? "") === "") !== ((c.keyFile ?? "") === "")) {
    return (c.certFile ?? "") === ""
      ? { key: "certFile", problem: "is needed with key_file (a client certificate and its key go together)" }
      : { key: "keyFile", problem: "is needed with cert_file (a client certificate and its key go together)" };
  }
  return undefined;
}

/** What a backend's TLS connection uses: the files' contents, read once, and the servername. */
export interface TlsFiles {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
  /** The option names and paths, for messages ("[locking.redis] ca_file /etc/ca.pem"). */
  readonly table: string;
  readonly caFile: string;
  readonly certFile: string;
}

/**
 * Reads the TLS files of `c` (synchronously: once, at start, a few kB).
 * @param table how messages name the table: "[locking.redis]".
 * @throws LockhostError CONFIG_INVALID naming the option and the path when a file cannot be
 *   read, is not PEM, or the key does not belong to the certificate.
 */
export function readTlsFiles(table: string, c: Partial<TlsConfig>): TlsFiles {
  const read = (key: "caFile" | "certFile" | "keyFile", option: string): Buffer | undefined => {
    const path = c[key] ?? "";
    if (path === "") return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new LockhostError("CONFIG_INVALID", `${table} ${option} ${JSON.stringify(path)} cannot be read: ${(err as Error).message}`);
    }
  };
  const ca = read("caFile", "ca_file");
  const cert = read("certFile", "cert_file");
  const key = read("keyFile", "key_file");
  // Node reads the PEM when it builds a context: done here, so a bad file fails the start by name
  // instead of every connection attempt as an outage.
  const check = (what: string, options: ConnectionOptions): void => {
    try {
      createSecureContext(options);
    } catch (err) {
      throw new LockhostError("CONFIG_INVALID", `${table} ${what} cannot be used: ${(err as Error).message}`);
    }
  };
  // Node skips what is not a certificate in `ca` without a word: say so here.
  if (ca && !ca.includes("-----BEGIN CERTIFICATE-----")) {
    throw new LockhostError("CONFIG_INVALID", `${table} ca_file ${JSON.stringify(c.caFile)} holds no PEM certificate ("-----BEGIN CERTIFICATE-----")`);
  }
  if (ca) check(`ca_file ${JSON.stringify(c.caFile)}`, { ca });
  if (cert && key) check(`cert_file ${JSON.stringify(c.certFile)} with key_file ${JSON.stringify(c.keyFile)}`, { cert, key });
  return {
    ...(ca && { ca }),
    ...(cert && { cert }),
    ...(key && { key }),
    ...(c.servername && { servername: c.servername }),
    table,
    caFile: c.caFile ?? "",
    certFile: c.certFile ?? "",
  };
}

/**
 * The options of Node's tls.connect for `files`. With a servername, the server's certificate is
 * checked against it even where a driver sets its own servername (node-postgres sets the host).
 */
export function tlsOptionsOf(files: TlsFiles): ConnectionOptions {
  const { ca, cert, key, servername } = files;
  return {
    ...(ca && { ca }),
    ...(cert && { cert }),
    ...(key && { key }),
    ...(servername !== undefined && {
      servername,
      checkServerIdentity: (_host: string, peer: PeerCertificate) => checkServerIdentity(servername, peer),
    }),
  };
}

/** How every refused-handshake message starts: a backend's ping marks such an error permanent. */
export const TLS_REFUSED = "TLS refused";
/** Matches a message that carries a TLS refusal (for markPermanent). */
export const TLS_REFUSED_PATTERN = /\bTLS refused\b/;

/** Codes of Node's verification of the server's certificate (this host refused the server). */
const SERVER_CERT_CODES = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "INVALID_CA",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "HOSTNAME_MISMATCH",
  "CERT_CHAIN_TOO_LONG",
  "INVALID_PURPOSE",
]);
/** A case-insensitive pattern matching any of `alternatives` (each a regular expression source). */
function anyOf(alternatives: readonly string[]): RegExp {
  return new RegExp(alternatives.join("|"), "i");
}
/** The same refusals by their messages, for a client that passes on only text (gRPC). */
const SERVER_CERT_TEXT = anyOf([
  "self[- ]signed certificate",
  "unable to verify the first certificate",
  "unable to get (local )?issuer certificate",
  "certificate has expired",
  "certificate is not yet valid",
  "Hostname/IP does not match certificate's altnames",
  "certificate signature failure",
  "unsuitable certificate purpose",
]);
/** Alerts the server sends when it refuses this host's client certificate (or its absence). */
const CLIENT_CERT_TEXT = anyOf([
  "alert certificate required",
  "alert unknown ca",
  "alert bad certificate",
  "alert certificate expired",
  "alert certificate unknown",
  "alert certificate revoked",
  "alert access denied",
  "alert decrypt error",
  "peer did not return a certificate",
]);
/** A TLS client talking to a server that does not speak TLS there. */
const NOT_TLS_TEXT = /wrong version number|packet length too long|unknown protocol|does not support SSL/i;

/**
 * The message of a TLS handshake `err` refused, naming the side that refused, the reason and
 * the options to check; undefined when `err` is no TLS refusal (an outage, say).
 */
export function tlsRefusal(err: unknown, files: TlsFiles | undefined, table: string): string | undefined {
  const code = typeof (err as { code?: unknown })?.code === "string" ? (err as { code: string }).code : "";
  const message = err instanceof Error ? err.message : String(err);
  const reason = code && !message.includes(code) ? `${message} (${code})` : message;
  const ca = files?.caFile ? `ca_file ${JSON.stringify(files.caFile)}` : "ca_file (not set: the system's CAs)";
  if (SERVER_CERT_CODES.has(code) || SERVER_CERT_TEXT.test(message)) {
    const name = code === "ERR_TLS_CERT_ALTNAME_INVALID" || /altnames/i.test(message);
    const hint = name
      ? `check ${table} servername (${files?.servername ? JSON.stringify(files.servername) : "not set: the host connected to"}) or the host name you connect to`
      : `check ${table} ${ca}`;
    return `${TLS_REFUSED}: this host refused the server's certificate: ${reason}; ${hint}`;
  }
  if (CLIENT_CERT_TEXT.test(message)) {
    const mine = files?.certFile ? `cert_file ${JSON.stringify(files.certFile)}` : "cert_file (not set: this host sent no certificate)";
    return `${TLS_REFUSED}: the server refused this host's client certificate: ${reason}; check ${table} ${mine} and key_file`;
  }
  if (NOT_TLS_TEXT.test(message)) {
    return `${TLS_REFUSED}: the server does not speak TLS there: ${reason}; check ${table} tls and the port`;
  }
  return undefined;
}
