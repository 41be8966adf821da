// A connection URL's password is never printed, whatever it holds: properties over random
// passwords (any printable ASCII character, percent-encoded or not) in Redis and PostgreSQL URLs,
// through every place a URL can surface: config errors (a field's check, a TOML syntax error
// quoting the line), the run summary, `lockhost check`'s output, /readyz's body, the backend's
// log lines, and a driver message that echoes the URL or the bare password.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { scrubberFor, redactUrlSecrets } from "../kit/redact.js";
import { parseConfig, resolveConfig } from "../host/config/load.js";
import { summaryLines } from "../host/cli/summary.js";
import { check } from "../host/cli/check.js";
import { readiness } from "../host/admin/readiness.js";
import { LockService } from "../host/locking/service.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import "./support/register-backends.js";
import { captureLogger } from "./support/log.js";
import { freePort } from "./support/servers.js";

/**
 * A password of printable ASCII characters (space included), at least one of them not a space,
 * which may hold what reads as the start of another URL ("ab://", "redis://").
 */
const password = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) },
      { weight: 1, arbitrary: fc.constantFrom("://", "ab://", "x://", "redis://", "postgres://", " h://") },
    ),
    { minLength: 4, maxLength: 20 },
  )
  .map((units) => units.join(""))
  .filter((pw) => pw.length >= 6 && new Set(pw).size >= 3);

/** The forms in which `pw` could be read back: as written, percent-encoded, percent-decoded. */
function leak(output: string, pw: string): string | undefined {
  const forms = new Set([pw, encodeURIComponent(pw)]);
  try {
    forms.add(decodeURIComponent(pw));
  } catch {
    // not valid percent-encoding
  }
  return [...forms].find((f) => f.length >= 4 && output.includes(f));
}

/**
 * Whether `pw` can stand in a URL as `s` writes it: a password= parameter's "&" or white space
 * must be percent-encoded (unencoded, a parser splits it there, and so does the masking of a URL
 * inside a longer text, kit/redact.ts); in the userinfo anything goes.
 */
const fits = (s: Shape, pw: string): boolean => !(s.inQuery && !s.encoded && /[&\s]/.test(pw));

/** A URL of `scheme` with `pw` (written as is, or percent-encoded) as the userinfo's password or as a password= parameter. */
interface Shape {
  readonly scheme: "redis" | "postgres";
  readonly user: string;
  readonly encoded: boolean;
  readonly inQuery: boolean;
}
const shape = fc.record({
  scheme: fc.constantFrom("redis" as const, "postgres" as const),
  user: fc.constantFrom("user", "app", ""),
  encoded: fc.boolean(),
  inQuery: fc.boolean(),
});
function urlOf(s: Shape, pw: string, port: number): string {
  const secret = s.encoded ? encodeURIComponent(pw) : pw;
  const path = s.scheme === "redis" ? "/0" : "/test";
  return s.inQuery
    ? `${s.scheme}://${s.user ? `${s.user}@` : ""}127.0.0.1:${port}${path}?password=${secret}`
    : `${s.scheme}://${s.user}:${secret}@127.0.0.1:${port}${path}`;
}
const backendOf = (s: Shape): "redis" | "pg" => (s.scheme === "redis" ? "redis" : "pg");

/** Every message the config loader gives for `url`, valid or not. */
function configOutputs(s: Shape, url: string): string {
  const out: string[] = [];
  const attempt = (f: () => unknown): void => {
    try {
      f();
    } catch (err) {
      out.push((err as Error).message);
    }
  };
  const table = backendOf(s);
  // Another field is wrong too, so there is an error whether the url is valid or not.
  const other = table === "redis" ? { keyPrefix: "{x" } : { table: "Bad-Name" };
  attempt(() => resolveConfig({ locking: { backend: table, [table]: { url, ...other } } } as never));
  const toml = `[locking]\nbackend = "${table}"\n[locking.${table}]\nurl = ${JSON.stringify(url)}\n`;
  attempt(() => parseConfig(`${toml}${table === "redis" ? 'key_prefix = "{"' : 'table = "Bad-Name"'}\n`, { source: "lockhost.toml", baseDir: "/" }));
  // A syntax error on the url's line: the parser quotes the line.
  attempt(() => parseConfig(`${toml.replace(/\n$/, "")} x = \n`, { source: "lockhost.toml", baseDir: "/" }));
  // Valid: the run summary names the backend by its url.
  try {
    const config = resolveConfig({ locking: { backend: table, [table]: { url } } } as never);
    out.push(summaryLines(config, ["n1"], undefined).join("\n"));
  } catch (err) {
    out.push((err as Error).message);
  }
  return out.join("\n");
}

/** What /readyz, the logs and `lockhost check` say about a backend at `url` (nothing listens on its port). */
async function runtimeOutputs(s: Shape, url: string): Promise<string> {
  const out: string[] = [];
  const { logger, lines } = captureLogger();
  const table = backendOf(s);
  try {
    const backend =
      table === "redis"
        ? new RedisBackend({ url, keyPrefix: "lockhost-secrets:", commandTimeoutMs: 300, reclaimOwnLocks: false }, logger)
        : new PgBackend({ url, sessions: 1, table: "lockhost_secrets", commandTimeoutMs: 300 }, logger);
    const locks = new LockService(backend, { node: "n1" });
    out.push(JSON.stringify(await readiness(locks)));
    await locks.close();
  } catch (err) {
    out.push((err as Error).message);
  }
  out.push(JSON.stringify(lines));
  let config;
  try {
    config = resolveConfig({ locking: { backend: table, [table]: { url, commandTimeoutMs: 300 } } } as never);
  } catch (err) {
    out.push((err as Error).message);
  }
  if (config) {
    const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => void out.push(args.join(" ")));
    try {
      await check(config);
    } finally {
      log.mockRestore();
    }
  }
  return out.join("\n");
}

describe("a connection URL's password is never printed", () => {
  afterEach(() => vi.restoreAllMocks());

  it("the repro: a password with '/' in a config error", () => {
    const message = configOutputs({ scheme: "redis", user: "user", encoded: false, inQuery: false }, "redis://user:Acl/Pass@w0rd@127.0.0.1:6390");
    expect(message).toContain(
      'url is not a valid URL (percent-encode "/", "?", "#" and "@" in a user name or password (%2F, %3F, %23, %40)), got "redis://user:***@127.0.0.1:6390"',
    );
    expect(message).not.toContain("Acl/Pass");
    expect(message).not.toContain("w0rd");
  });

  it("masks by where the userinfo ends, whatever the password holds, and keeps the rest", () => {
    expect(redactUrlSecrets("redis://user:Acl/Pass@w0rd@h:6379/0")).toBe("redis://user:***@h:6379/0");
    expect(redactUrlSecrets('postgres://app:a b"c@db/x?sslmode=verify-full')).toBe("postgres://app:***@db/x?sslmode=verify-full");
    expect(redactUrlSecrets("see postgres://app:pw@db/x and rediss://u:p2@c\nnext redis://h:6379")).toBe(
      "see postgres://app:***@db/x and rediss://u:***@c\nnext redis://h:6379",
    );
    expect(redactUrlSecrets("postgres://db/x?application_name=a&password=p/w?x&b=1")).toBe("postgres://db/x?application_name=a&password=***&b=1");
    expect(redactUrlSecrets("redis://user@h redis://h:6379")).toBe("redis://user@h redis://h:6379");
    // A password that holds "x://" is not cut in two (before: printed whole).
    expect(redactUrlSecrets('[locking.redis] url "redis://user:ab://cd@127.0.0.1:6379": bad')).toBe(
      '[locking.redis] url "redis://user:***@127.0.0.1:6379": bad',
    );
    expect(redactUrlSecrets("redis://u:a b://c@h/0 and redis://h2:6379")).toBe("redis://u:***@h/0 and redis://h2:6379");
    expect(redactUrlSecrets("redis://u@h/0?password=xy://cd&db=1")).toBe("redis://u@h/0?password=***&db=1");
  });

  it("config errors and the run summary (property)", async () => {
    const port = await freePort();
    fc.assert(
      fc.property(shape, password, (s, pw) => {
        fc.pre(fits(s, pw));
        fc.pre(leak(configOutputs(s, urlOf(s, "QQQQQQQQQQ", port)), pw) === undefined);
        const output = configOutputs(s, urlOf(s, pw, port));
        expect(leak(output, pw), output).toBeUndefined();
      }),
      { numRuns: 300 },
    );
  });

  it("a password written percent-encoded whose text holds %XX is masked decoded too", () => {
    // The password is "ab%41cd", written "ab%2541cd": before, "abAcd" was printed as is.
    expect(scrubberFor("redis://user:ab%2541cd@h:6379/0")("AUTH default ab%41cd abAcd failed")).toBe("AUTH default *** *** failed");
  });

  it("a driver message that echoes the URL or the bare password, through the backend's scrubber (property)", () => {
    fc.assert(
      fc.property(shape, password, (s, pw) => {
        fc.pre(fits(s, pw));
        const url = urlOf(s, pw, 6379);
        const decoded = (() => {
          try {
            return decodeURIComponent(pw);
          } catch {
            return pw;
          }
        })();
        const echoed = `connect to ${url} failed; AUTH default ${pw} ${decoded} ${encodeURIComponent(pw)} refused`;
        fc.pre(leak(`connect to ${urlOf(s, "QQQQQQQQQQ", 6379)} failed; AUTH default QQQQ refused`, pw) === undefined);
        const output = scrubberFor(url)(echoed);
        expect(leak(output, pw), output).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it("/readyz, the backend's logs and lockhost check's output (property)", async () => {
    const port = await freePort();
    await fc.assert(
      fc.asyncProperty(shape, password, async (s, pw) => {
        fc.pre(fits(s, pw));
        fc.pre(leak(urlOf(s, "QQQQQQQQQQ", port), pw) === undefined);
        const output = await runtimeOutputs(s, urlOf(s, pw, port));
        expect(leak(output, pw), output).toBeUndefined();
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
