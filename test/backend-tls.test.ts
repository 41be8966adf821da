// TLS to every backend, with files: private servers (Redis, PostgreSQL, etcd) that speak only
// TLS and require client certificates, with certificates this test makes with openssl. Each
// backend connects with [locking.<name>] ca_file / cert_file / key_file; a wrong CA, a missing
// client certificate and a wrong servername are refused for good at start (CONFIG_INVALID from
// BackendHealth.atStart, exit 2 from the CLI) with the option and the TLS reason in the message;
// a file that cannot be read is a config error naming the option and the path.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPermanent, type LockhostError, toLockhostError } from "../kit/errors.js";
import { readTlsFiles, tlsRefusal } from "../kit/tls.js";
import { BackendHealth } from "../host/backend-health.js";
import { LockService } from "../host/locking/service.js";
import type { LockBackend } from "../kit/backend.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import type { RedisConfig } from "../plugins/backends/redis/config.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import type { PgConfig } from "../plugins/backends/pg/config.js";
import { resolveConfig } from "../host/config/load.js";
import { EtcdBackend } from "../plugins/backends/etcd/index.js";
import { etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/config.js";
import { makeTestCerts, type TestCerts } from "./support/certs.js";
import { startEtcdCluster, type EtcdCluster } from "./support/etcd-servers.js";
import { startPostgresServer, startRedisServer, type PgServer, type RedisServer } from "./support/servers.js";
import { silent } from "./support/log.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist/host/cli/main.js");

/** The error `p` rejects with. */
async function rejection(p: Promise<unknown>): Promise<LockhostError> {
  try {
    await p;
  } catch (err) {
    return toLockhostError(err);
  }
  throw new Error("expected a rejection");
}

/** The error `f` throws. */
function thrown(f: () => unknown): LockhostError {
  try {
    f();
  } catch (err) {
    return toLockhostError(err);
  }
  throw new Error("expected a throw");
}

/** What the host says at start about `backend`: resolves when it answers, rejects CONFIG_INVALID when refused for good. */
async function startCheck(backend: LockBackend, table: string): Promise<void> {
  const locks = new LockService(backend, { node: "tls-test" });
  try {
    await BackendHealth.atStart(locks, silent, `lockhost.toml: ${table}`);
  } finally {
    await locks.close();
  }
}

/** Runs `lockhost <command> --config` on a TOML file written from `toml`; its exit code and output. */
function runCli(command: "check" | "run", toml: string): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-tls-cli-"));
  try {
    const file = join(dir, "lockhost.toml");
    writeFileSync(file, toml);
    const r = spawnSync(process.execPath, [cli, command, "--config", file], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, LOCKHOST_NODE_NOTICE: "0" },
    });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let certs: TestCerts;

beforeAll(() => {
  // CN postgres: PostgreSQL's cert auth takes the client certificate's CN as the user.
  certs = makeTestCerts("postgres");
});
afterAll(() => certs?.remove());

describe("what a refused handshake says (kit/tls.ts)", () => {
  const files = () => readTlsFiles("[locking.x]", { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey });
  const tlsError = (code: string, message: string): Error => Object.assign(new Error(message), { code });

  it("names the side that refused, the reason and the key to check; an outage is none", () => {
    expect(tlsRefusal(tlsError("CERT_HAS_EXPIRED", "certificate has expired"), files(), "[locking.x]")).toBe(
      `TLS refused: this host refused the server's certificate: certificate has expired (CERT_HAS_EXPIRED); check [locking.x] ca_file "${certs.ca}"`,
    );
    expect(
      tlsRefusal(
        tlsError("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match certificate's altnames: Host: db. is not in the cert's altnames: DNS:localhost"),
        files(),
        "[locking.x]",
      ),
    ).toContain("check [locking.x] servername (not set: the host connected to) or the host name you connect to");
    expect(tlsRefusal(tlsError("ERR_SSL_TLSV1_ALERT_UNKNOWN_CA", "...:tlsv1 alert unknown ca:..."), files(), "[locking.x]")).toContain(
      `TLS refused: the server refused this host's client certificate: ...:tlsv1 alert unknown ca:... (ERR_SSL_TLSV1_ALERT_UNKNOWN_CA); check ` +
        `[locking.x] cert_file "${certs.clientCert}" and key_file`,
    );
    expect(tlsRefusal(new Error("The server does not support SSL connections"), undefined, "[locking.pg]")).toContain(
      "TLS refused: the server does not speak TLS there",
    );
    // gRPC passes text only.
    expect(tlsRefusal("No connection established. Last error: Error: self-signed certificate in certificate chain", undefined, "[locking.etcd]")).toContain(
      "check [locking.etcd] ca_file (not set: the system's CAs)",
    );
    expect(tlsRefusal(tlsError("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:6380"), files(), "[locking.x]")).toBeUndefined();
    expect(tlsRefusal(tlsError("ECONNRESET", "write ECONNRESET"), files(), "[locking.x]")).toBeUndefined();
  });

  it("a key that does not belong to its certificate is a config error naming both files", () => {
    const err = thrown(() => readTlsFiles("[locking.x]", { certFile: certs.clientCert, keyFile: certs.serverKey }));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain(`[locking.x] cert_file "${certs.clientCert}" with key_file "${certs.serverKey}" cannot be used`);
  });
});

describe("redis over TLS with client certificates", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca } });
  }, 60_000);
  afterAll(async () => server?.stop());

  const config = (over: Partial<RedisConfig> = {}): RedisConfig => ({
    url: server.url,
    keyPrefix: "lockhost-tls:",
    commandTimeoutMs: 5_000,
    reclaimOwnLocks: false,
    caFile: certs.ca,
    certFile: certs.clientCert,
    keyFile: certs.clientKey,
    ...over,
  });

  it("connects with ca_file, cert_file and key_file, and takes a lock", async () => {
    const locks = new LockService(new RedisBackend(config(), silent), { node: "tls-test" });
    try {
      await locks.ping();
      const lease = await locks.tryLock("tls-key", { ttlMs: 5_000 });
      expect(lease).not.toBeNull();
      await locks.release(lease!);
    } finally {
      await locks.close();
    }
  });

  it("tls = true on a redis:// url is TLS too", async () => {
    const backend = new RedisBackend(config({ url: server.url.replace(/^rediss:/, "redis:"), tls: true }), silent);
    try {
      await backend.ping();
    } finally {
      await backend.close();
    }
  });

  it("refuses a server whose certificate another CA signed, for good, naming ca_file and the reason", async () => {
    const backend = new RedisBackend(config({ caFile: certs.otherCa }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain("TLS refused: this host refused the server's certificate");
      expect(err.message).toMatch(/self[- ]signed certificate in certificate chain|unable to (verify|get local issuer)/);
      expect(err.message).toContain(`[locking.redis] ca_file "${certs.otherCa}"`);
      expect(err.message).toContain("retrying cannot help");
    } finally {
      await backend.close();
    }
    const atStart = await rejection(startCheck(new RedisBackend(config({ caFile: certs.otherCa }), silent), "[locking.redis]"));
    expect(atStart.code).toBe("CONFIG_INVALID");
    expect(atStart.message).toContain("lockhost.toml: [locking.redis]: the redis backend refused this host for good");
  });

  it("names a client certificate the server refused, for good, once the server's alert is read", async () => {
    // Under TLS 1.3 the server checks the client's certificate after the client's side of the
    // handshake is done: its alert comes with the first read, or the client's first write finds
    // the connection reset (an outage, as far as the client can tell). Each reconnect attempt
    // may read it; the test asks until one has.
    const backend = new RedisBackend(config({ certFile: "", keyFile: "" }), silent);
    try {
      let err: LockhostError | undefined;
      for (let i = 0; i < 100; i++) {
        err = await rejection(backend.ping());
        expect(err.code).toBe("BACKEND_UNAVAILABLE");
        if (err.message.includes("TLS refused")) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(err!.message).toContain("TLS refused: the server refused this host's client certificate");
      expect(err!.message).toContain("[locking.redis] cert_file (not set: this host sent no certificate)");
      expect(isPermanent(err)).toBe(true);
    } finally {
      await backend.close();
    }
  }, 60_000);

  it("refuses for good a certificate that is not for the servername", async () => {
    const backend = new RedisBackend(config({ servername: "cache.example.com" }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain("TLS refused: this host refused the server's certificate");
      expect(err.message).toContain(`[locking.redis] servername ("cache.example.com")`);
    } finally {
      await backend.close();
    }
  });

  it("servername is checked in place of the url's host", async () => {
    const backend = new RedisBackend(config({ servername: "localhost" }), silent);
    try {
      await backend.ping();
    } finally {
      await backend.close();
    }
  });

  it("a TLS file that cannot be read is a config error naming the option and the path", () => {
    const missing = join(certs.dir, "nope.pem");
    const err = thrown(() => new RedisBackend(config({ caFile: missing }), silent));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain(`[locking.redis] ca_file "${missing}" cannot be read: ENOENT`);
    const notPem = thrown(() => new RedisBackend(config({ caFile: certs.clientKey.replace(/client\.key$/, "client.ext") }), silent));
    expect(notPem.code).toBe("CONFIG_INVALID");
    expect(notPem.message).toContain("[locking.redis] ca_file");
    expect(notPem.message).toContain("holds no PEM certificate");
  });

  it("lockhost check and run exit 2 on a refused certificate, naming the option and the reason", () => {
    const toml = (ca: string) =>
      `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${server.url}"\ncommand_timeout_ms = 5000\nca_file = "${ca}"\ncert_file = ` +
      `"${certs.clientCert}"\nkey_file = "${certs.clientKey}"\n`;
    const check = runCli("check", toml(certs.otherCa));
    expect(check.output).toContain("TLS refused: this host refused the server's certificate");
    expect(check.output).toContain(`ca_file "${certs.otherCa}"`);
    expect(check.status).toBe(2);
    const run = runCli("run", toml(certs.otherCa));
    expect(run.output).toContain("refused this host for good");
    expect(run.output).toContain("TLS refused");
    expect(run.status).toBe(2);
    const ok = runCli("check", toml(certs.ca));
    expect(ok.output).toContain("ok   backend redis answers");
    expect(ok.status).toBe(0);
  }, 120_000);
});

describe("pg over TLS with client certificates (hostssl … cert)", () => {
  let server: PgServer;
  const table = `lockhost_tls_${process.pid}`;
  beforeAll(async () => {
    server = await startPostgresServer({ tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca } });
  }, 60_000);
  afterAll(async () => server?.stop());

  const config = (over: Partial<PgConfig> = {}): PgConfig => ({
    url: server.url,
    sessions: 1,
    table,
    commandTimeoutMs: 5_000,
    caFile: certs.ca,
    certFile: certs.clientCert,
    keyFile: certs.clientKey,
    ...over,
  });

  it("connects with ca_file, cert_file and key_file, and takes a lock", async () => {
    const locks = new LockService(new PgBackend(config(), silent), { node: "tls-test" });
    try {
      await locks.ping();
      const lease = await locks.tryLock("tls-key", { ttlMs: 5_000 });
      expect(lease).not.toBeNull();
      await locks.release(lease!);
    } finally {
      await locks.close();
    }
  });

  it("takes sslmode=verify-full in the url beside the files (removed before node-postgres reads it)", async () => {
    const backend = new PgBackend(config({ url: `${server.url}?sslmode=verify-full&application_name=x` }), silent);
    try {
      await backend.ping();
    } finally {
      await backend.close();
    }
  });

  it("refuses a server whose certificate another CA signed, for good at start, naming ca_file and the reason", async () => {
    const backend = new PgBackend(config({ caFile: certs.otherCa }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain(`PostgreSQL at ${server.url}: TLS refused: this host refused the server's certificate`);
      expect(err.message).toMatch(/self[- ]signed certificate in certificate chain|unable to (verify|get local issuer)/);
      expect(err.message).toContain(`[locking.pg] ca_file "${certs.otherCa}"`);
    } finally {
      await backend.close();
    }
    const atStart = await rejection(startCheck(new PgBackend(config({ caFile: certs.otherCa }), silent), "[locking.pg]"));
    expect(atStart.code).toBe("CONFIG_INVALID");
    expect(atStart.message).toContain("lockhost.toml: [locking.pg]: the pg backend refused this host for good");
  });

  it("a certificate not for the servername is refused for good (node-postgres sets its own servername: checked all the same)", async () => {
    const backend = new PgBackend(config({ servername: "db.example.com" }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain(`[locking.pg] servername ("db.example.com")`);
    } finally {
      await backend.close();
    }
  });

  it("without a client certificate the server's refusal is permanent", async () => {
    const backend = new PgBackend(config({ certFile: "", keyFile: "" }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toMatch(/certificate/);
    } finally {
      await backend.close();
    }
  });

  it("sslmode=require alone (no TLS fields) verifies the server's certificate, as node-postgres reads it: an unknown CA is refused", async () => {
    const backend = new PgBackend({ url: `${server.url}?sslmode=require`, sessions: 1, table, commandTimeoutMs: 5_000 }, silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain("TLS refused: this host refused the server's certificate");
      expect(err.message).toContain("[locking.pg] ca_file (not set: the system's CAs)");
    } finally {
      await backend.close();
    }
  });

  it("the url's TLS parameters may not contradict the fields, nor name a file twice; files need TLS on", () => {
    const bad = (pg: Record<string, unknown>): string => {
      try {
        resolveConfig({ locking: { backend: "pg", pg } } as never);
      } catch (err) {
        return (err as Error).message;
      }
      return "no error";
    };
    expect(bad({ url: "postgres://db/x?sslrootcert=/etc/ca.pem", caFile: "/etc/ca.pem" })).toContain(
      "url has sslrootcert=/etc/ca.pem: give the file as ca_file only",
    );
    expect(bad({ url: "postgres://db/x?sslmode=disable", tls: true })).toContain("url has sslmode=disable: it contradicts");
    expect(bad({ url: "postgres://db/x?sslmode=no-verify", caFile: "/etc/ca.pem" })).toContain("url has sslmode=no-verify");
    expect(bad({ url: "postgres://db/x", caFile: "/etc/ca.pem" })).toContain(
      "caFile is set, but TLS is off: set tls = true (or sslmode=verify-full in url), or remove it",
    );
    expect(bad({ url: "postgres://db/x", tls: true, certFile: "/c.pem" })).toContain("keyFile is needed with cert_file");
    expect(bad({ url: "postgres://db/x?sslmode=verify-full", caFile: "/etc/ca.pem" })).toBe("no error");
  });

  it("a TLS file that cannot be read is a config error naming the option and the path", () => {
    const missing = join(certs.dir, "nope.key");
    const err = thrown(() => new PgBackend(config({ keyFile: missing }), silent));
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain(`[locking.pg] key_file "${missing}" cannot be read: ENOENT`);
  });
});

describe("etcd over TLS with client certificates (--client-cert-auth)", () => {
  let cluster: EtcdCluster;
  beforeAll(async () => {
    cluster = await startEtcdCluster(1, { tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca } });
  }, 60_000);
  afterAll(async () => cluster?.stop());

  const config = (over: Partial<EtcdConfig> = {}): EtcdConfig => ({
    ...etcdDefaults,
    endpoints: cluster.endpoints,
    keyPrefix: `lockhost-tls-${process.pid}/`,
    dialTimeoutMs: 5_000,
    commandTimeoutMs: 5_000,
    caFile: certs.ca,
    certFile: certs.clientCert,
    keyFile: certs.clientKey,
    ...over,
  });

  it("connects with ca_file, cert_file and key_file, and takes a lock", async () => {
    const locks = new LockService(new EtcdBackend(config(), silent), { node: "tls-test" });
    try {
      await locks.ping();
      const lease = await locks.tryLock("tls-key", { ttlMs: 5_000 });
      expect(lease).not.toBeNull();
      await locks.release(lease!);
    } finally {
      await locks.close();
    }
  });

  it("refuses a member whose certificate another CA signed, for good at start, naming ca_file and the reason", async () => {
    const backend = new EtcdBackend(config({ caFile: certs.otherCa }), silent);
    try {
      const err = await rejection(backend.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain(`etcd at ${cluster.endpoints[0]}: TLS refused: this host refused the server's certificate`);
      expect(err.message).toContain(`[locking.etcd] ca_file "${certs.otherCa}"`);
    } finally {
      await backend.close();
    }
    const atStart = await rejection(startCheck(new EtcdBackend(config({ caFile: certs.otherCa }), silent), "[locking.etcd]"));
    expect(atStart.code).toBe("CONFIG_INVALID");
    expect(atStart.message).toContain("lockhost.toml: [locking.etcd]: the etcd backend refused this host for good");
  });

  it("servername names the certificate's name in place of the endpoint's host", async () => {
    const good = new EtcdBackend(config({ servername: "localhost" }), silent);
    try {
      await good.ping();
    } finally {
      await good.close();
    }
    const bad = new EtcdBackend(config({ servername: "etcd.example.com" }), silent);
    try {
      const err = await rejection(bad.ping());
      expect(isPermanent(err)).toBe(true);
      expect(err.message).toContain("TLS refused");
    } finally {
      await bad.close();
    }
  });

  it("a TLS file that cannot be read is a config error naming the option and the path", async () => {
    const missing = join(certs.dir, "nope.pem");
    const err = await rejection((async () => new EtcdBackend(config({ certFile: missing }), silent))());
    expect(err.code).toBe("CONFIG_INVALID");
    expect(err.message).toContain(`[locking.etcd] cert_file "${missing}" cannot be read: ENOENT`);
  });
});
