// The etcd role that docs/backends.md ("Least-privilege grants") lists, read from the page and
// run on a private etcd with authentication on: lockhost's basics work as a user whose role
// grants read/write on the key prefix only, and a user without it gets an error that names it.
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { BackendHealth } from "../host/backend-health.js";
import { EtcdBackend } from "../plugins/backends/etcd/index.js";
import { etcdDefaults } from "../plugins/backends/etcd/config.js";
import { startEtcdCluster, type EtcdCluster } from "./support/etcd-servers.js";
import { enableAuth, gateway } from "./support/etcd-gateway.js";
import { exerciseBasics } from "./support/grant-basics.js";
import { silent } from "./support/log.js";

const ROOT_PASSWORD = "grants-root-pw";
const PASSWORD = "grants-test-pw";
const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

/** The end of the range of keys that start with `prefix` (etcdctl --prefix). */
function prefixEnd(prefix: string): string {
  const end = Buffer.from(prefix, "utf8");
  end[end.length - 1]! += 1;
  return end.toString("base64");
}

/** The etcdctl lines of the docs' block that starts `# etcd: a role limited to the key prefix`. */
function documentedCommands(): string[] {
  const page = readFileSync(new URL("../docs/backends.md", import.meta.url), "utf8");
  const head = "```sh\n# etcd: a role limited to the key prefix\n";
  const at = page.indexOf(head);
  if (at < 0) throw new Error("docs/backends.md has no sh block starting '# etcd: a role limited to the key prefix'");
  return page.slice(at + head.length, page.indexOf("\n```", at + head.length)).split("\n");
}

/**
 * Runs one documented etcdctl line through etcd's JSON gateway as root (etcdctl is not needed
 * on the test machine): each line etcdctl would send as the same request.
 */
async function runEtcdctl(endpoint: string, token: string, line: string, rename: (name: string) => string): Promise<void> {
  const call = (path: string, body: object): Promise<unknown> => gateway(endpoint, path, body, token);
  let m: RegExpExecArray | null;
  if ((m = /^etcdctl --user root role add (\S+)$/.exec(line))) await call("/v3/auth/role/add", { name: rename(m[1]!) });
  else if ((m = /^etcdctl --user root role grant-permission (\S+) --prefix=true (read|write|readwrite) (\S+)$/.exec(line))) {
    await call("/v3/auth/role/grant", { name: rename(m[1]!), perm: { permType: m[2]!.toUpperCase(), key: b64(m[3]!), range_end: prefixEnd(m[3]!) } });
  } else if ((m = /^etcdctl --user root user add (\S+)$/.exec(line))) await call("/v3/auth/user/add", { name: rename(m[1]!), password: PASSWORD });
  else if ((m = /^etcdctl --user root user grant-role (\S+) (\S+)$/.exec(line)))
    await call("/v3/auth/user/grant", { user: rename(m[1]!), role: rename(m[2]!) });
  else throw new Error(`the test does not know how to run: ${line}`);
}

let cluster: EtcdCluster;
let rootToken: string;
const backends: EtcdBackend[] = [];

beforeAll(async () => {
  cluster = await startEtcdCluster(1);
  await enableAuth(cluster.endpoints[0]!, ROOT_PASSWORD);
  rootToken = (await gateway<{ token: string }>(cluster.endpoints[0]!, "/v3/auth/authenticate", { name: "root", password: ROOT_PASSWORD })).token;
}, 60_000);

afterEach(async () => {
  await Promise.all(backends.splice(0).map((b) => b.close()));
});

afterAll(async () => {
  await cluster?.stop();
});

/** A user named `user` with the documented commands, the line filter `edit` applied. */
async function userWith(user: string, edit: (line: string) => string = (l) => l): Promise<void> {
  for (const line of documentedCommands()) {
    await runEtcdctl(cluster.endpoints[0]!, rootToken, edit(line), (name) => (name === "lockhost" ? user : name));
  }
}

async function backendAs(user: string): Promise<EtcdBackend> {
  const b = new EtcdBackend({ ...etcdDefaults, endpoints: cluster.endpoints, username: user, password: PASSWORD, commandTimeoutMs: 5_000 }, silent);
  backends.push(b);
  return b;
}

describe("etcd least-privilege role (docs/backends.md)", () => {
  it("runs the basics and every kind as a user whose role grants only the key prefix", async () => {
    await userWith("lockhost");
    await exerciseBasics(await backendAs("lockhost"), await backendAs("lockhost"), randomUUID().slice(0, 8));
  }, 60_000);

  it("a user granted another prefix fails the start, naming the prefix it needs", async () => {
    await userWith("lockhost-other", (l) => l.replace(/readwrite lockhost\/$/, "readwrite other/"));
    const backend = await backendAs("lockhost-other");
    const err = await backend.ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain("the etcd user lacks read/write permission on the key prefix lockhost/");
    const locks = new LockService(backend, { node: "n" });
    await expect(BackendHealth.atStart(locks, silent, "lockhost.toml: [locking.etcd]")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("lacks read/write permission on the key prefix lockhost/"),
    });
    await expect(locks.tryLock("k", { ttlMs: 1_000 })).rejects.toMatchObject({
      code: "BACKEND_UNAVAILABLE",
      retryable: false,
      message: expect.stringContaining("the etcd user lacks a permission lockhost needs: read/write on its key prefix"),
    });
    await locks.close({ closeBackend: false });
  });

  it("a user with read only on the prefix fails the start too", async () => {
    await userWith("lockhost-read", (l) => l.replace(" readwrite ", " read "));
    const err = await (await backendAs("lockhost-read")).ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain("the etcd user lacks read/write permission on the key prefix lockhost/");
  });
});
