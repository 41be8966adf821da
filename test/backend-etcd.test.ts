// The etcd backend against the shared single-member etcd (ETCD_ENDPOINTS, started by the global
// setup): the whole backend contract (every kind, lifecycle, lock sets, election), then what is
// specific to etcd: whole-second leases kept ahead of the locks they carry, losses told at once
// (a revoked lease, a deleted key), a waiter whose lease died while it waited (etcd#11456),
// fences across a restart, a compacted watch, and bad input (unreachable endpoints, wrong
// credentials, too-large values), each a coded error with the host up. The tests that restart,
// stall or reconfigure etcd use private members of their own.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { isPermanent, type LockhostError } from "../kit/errors.js";
import { LockService } from "../host/locking/service.js";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { backendContract } from "./support/backend-contract.js";
import { rejection } from "../testing/rejection.js";
import { etcdEndpoints, startEtcdCluster } from "./support/etcd-servers.js";
import { compactAll, deleteKey, enableAuth, keysUnder, leaseTtl, readKey, revokeLease } from "./support/etcd-gateway.js";
import { startTcpProxy } from "./support/tcp-proxy.js";
import { freePort } from "./support/servers.js";
import { sleep } from "./support/until.js";
import { silent } from "./support/log.js";

const prefix = `lockhost-test/${randomUUID().slice(0, 8)}/`;
const config = (over: Partial<EtcdConfig> = {}): EtcdConfig => ({ ...etcdDefaults, endpoints: etcdEndpoints(), keyPrefix: prefix, ...over });
const endpoint = (): string => etcdEndpoints()[0]!;
let n = 0;
const name = (): string => `etcd-${++n}`;

backendContract("etcd", { create: () => new EtcdBackend(config(), silent), fences: "clock" });

const opened: { close(): Promise<unknown> }[] = [];
afterAll(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => undefined);
});
async function service(node: string, over: Partial<EtcdConfig> = {}): Promise<LockService> {
  const s = new LockService(new EtcdBackend(config(over), silent), { node });
  opened.push(s);
  return s;
}

describe("etcd: leases", () => {
  it("carries a lock on a lease of whole seconds kept its margin ahead, and ends the lock at its own TTL", async () => {
    const a = await service("a");
    const key = name();
    const lease = (await a.tryLock(key, { ttlMs: 1_500, keepalive: false }))!;
    expect(lease.expiresAtMs - lease.acquiredAtMs).toBe(1_500);
    const kv = await readKey(endpoint(), `${prefix}m/global:${key}`);
    const ttl = await leaseTtl(endpoint(), kv!.lease!);
    // ceil((1500 + 2000 margin) / 1000) = 4 s: a dead host's lock would last at most that.
    expect(ttl.grantedS).toBe(4);
    await sleep(lease.expiresAtMs - Date.now() + 200);
    // This host's timer ended it at 1.5 s, long before the lease would have.
    expect(await readKey(endpoint(), `${prefix}m/global:${key}`)).toBeUndefined();
    expect((await a.status(key)).held).toBe(false);
  });

  it("tells a holder at once when its lease is revoked behind its back, and when its key is deleted", async () => {
    const a = await service("a");
    for (const act of ["revoke", "delete"] as const) {
      const key = name();
      const lease = (await a.tryLock(key, { ttlMs: 30_000, keepalive: true }))!;
      const kv = (await readKey(endpoint(), `${prefix}m/global:${key}`))!;
      const lost = new Promise<number>((resolve) => lease.signal.addEventListener("abort", () => resolve(performance.now())));
      const t0 = performance.now();
      if (act === "revoke") await revokeLease(endpoint(), kv.lease!);
      else await deleteKey(endpoint(), `${prefix}m/global:${key}`);
      expect((await lost) - t0, act).toBeLessThan(250);
      expect((lease.signal.reason as LockhostError).code).toBe("LOST");
    }
    // After the revoke, the next lock gets a new lease: the host goes on.
    expect(await a.tryLock(name(), { ttlMs: 5_000 })).not.toBeNull();
  });

  it("checks the lease again after a wait: a waiter whose lease died while it waited takes the lock on a live lease (etcd#11456)", async () => {
    const a = await service("a");
    const b = await service("b");
    const key = name();
    const held = (await a.tryLock(key, { ttlMs: 10_000 }))!;
    // b holds another lock of the same class, so its class lease exists; it then waits for key.
    await b.tryLock(name(), { ttlMs: 10_000 });
    const waiting = b.acquire(key, { ttlMs: 10_000, waitMs: 5_000 });
    await sleep(100);
    const bLease = (await readKey(endpoint(), `${prefix}m/global:etcd-${n}`))!.lease!;
    await revokeLease(endpoint(), bLease);
    await a.release(held);
    const got = await waiting;
    const kv = (await readKey(endpoint(), `${prefix}m/global:${key}`))!;
    expect(kv.lease).not.toBe(bLease);
    expect((await leaseTtl(endpoint(), kv.lease!)).ttlS).toBeGreaterThan(0);
    expect(got.fence).toBe(Number(kv.create_revision));
  });

  it("lets a dead host's waiter out of the queue with its host's shortest lease, not with its wait", async () => {
    const a = await service("a");
    const b = new LockService(new EtcdBackend(config({ leaseMarginMs: 1_000 }), silent), { node: "b" });
    const key = name();
    const held = (await a.tryLock(key, { ttlMs: 30_000, fair: true }))!;
    const waiting = b.acquire(key, { ttlMs: 10_000, waitMs: 60_000, fair: true }).catch(() => undefined);
    while ((await a.status(key, { kind: "fair" })).queued !== 1) await sleep(20);
    const place = (await keysUnder(endpoint(), `${prefix}q/fair/`)).find((k) => k.includes("/w/"))!;
    const id = (await readKey(endpoint(), place))!.lease!;
    // The place's lease is the 1 s margin's class, though the waiter would wait a minute.
    expect((await leaseTtl(endpoint(), id)).grantedS).toBeLessThanOrEqual(2);
    await b.close();
    void waiting;
    await a.release(held);
  });
});

describe("etcd: restarts and watches (private member)", () => {
  it("keeps fences rising across a restart of the cluster, and reconnects on its own", async () => {
    const cluster = await startEtcdCluster(1);
    try {
      const a = await service("a", { endpoints: cluster.endpoints });
      const key = name();
      const first = (await a.tryLock(key, { ttlMs: 5_000 }))!;
      await a.release(first);
      await cluster.members[0]!.kill();
      await cluster.members[0]!.start();
      let second;
      for (let i = 0; i < 100 && second === undefined; i++) {
        second = (await a.tryLock(key, { ttlMs: 5_000 }).catch(() => undefined)) ?? undefined;
        if (second === undefined) await sleep(100);
      }
      expect(second!.fence).toBeGreaterThan(first.fence);
    } finally {
      await cluster.stop();
    }
  }, 60_000);

  it("says it may have missed releases when the revision its watch resumes from was compacted", async () => {
    const cluster = await startEtcdCluster(1);
    const proxy = await startTcpProxy(Number(new URL(cluster.endpoints[0]!).port));
    try {
      const backend = new EtcdBackend(config({ endpoints: [`http://127.0.0.1:${proxy.port}`], commandTimeoutMs: 300, leaseMarginMs: 400 }), silent);
      opened.push(backend);
      let missed = 0;
      backend.onLost(
        () => undefined,
        () => void missed++,
      );
      const steps = backend.steps("mutex");
      await steps.acquire({ name: "k", owner: "o", ttlMs: 5_000, holder: { plugin: "p", node: "n" }, mode: "exclusive", limit: 0, queueMs: 0 });
      await steps.watch("k", () => undefined).ready;
      // Stall the network until the backend gives its streams up, compact meanwhile, then let it through.
      proxy.stall(true);
      await sleep(200);
      await compactAll(cluster.endpoints[0]!);
      await sleep(800);
      proxy.stall(false);
      const until = performance.now() + 10_000;
      while (missed === 0 && performance.now() < until) await sleep(50);
      expect(missed).toBeGreaterThan(0);
    } finally {
      await proxy.close();
      await cluster.stop();
    }
  }, 60_000);
});

describe("etcd: bad input and unreachable servers are coded errors, and the host stays up", () => {
  it("fails calls with BACKEND_UNAVAILABLE (retryable) while nothing answers at the endpoints", async () => {
    const port = await freePort();
    const backend = new EtcdBackend(config({ endpoints: [`http://127.0.0.1:${port}`], commandTimeoutMs: 300, dialTimeoutMs: 300 }), silent);
    opened.push(backend);
    const err = await rejection(backend.ping());
    expect(err.code).toBe("BACKEND_UNAVAILABLE");
    expect(isPermanent(err)).toBe(false);
    expect(err.message).toContain(`127.0.0.1:${port}`);
    const acquire = await rejection(
      backend.steps("mutex").acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" }, mode: "exclusive", limit: 0, queueMs: 0 }),
    );
    expect(acquire.code).toBe("BACKEND_UNAVAILABLE");
  });

  it("refuses wrong credentials for good (permanent), and works with the right ones", async () => {
    const cluster = await startEtcdCluster(1);
    try {
      await enableAuth(cluster.endpoints[0]!, "s3cret");
      const wrong = new EtcdBackend(config({ endpoints: cluster.endpoints, username: "root", password: "nope" }), silent);
      opened.push(wrong);
      const err = await rejection(wrong.ping());
      expect(err.code).toBe("BACKEND_UNAVAILABLE");
      expect(isPermanent(err), err.message).toBe(true);
      expect(err.message).not.toContain("nope");
      const right = new LockService(new EtcdBackend(config({ endpoints: cluster.endpoints, username: "root", password: "s3cret" }), silent), { node: "a" });
      opened.push(right);
      const lease = (await right.tryLock(name(), { ttlMs: 5_000 }))!;
      expect(lease.fence).toBeGreaterThan(0);
      await right.release(lease);
    } finally {
      await cluster.stop();
    }
  }, 60_000);

  it("refuses a value etcd cannot store with INVALID_ARGUMENT, changing nothing", async () => {
    const backend = new EtcdBackend(config(), silent);
    opened.push(backend);
    const leader = backend.steps("leader");
    const key = name();
    const got = await leader.acquire({ name: key, owner: "o", ttlMs: 5_000, holder: { plugin: "p", node: "n" }, mode: "exclusive", limit: 0, queueMs: 0 });
    expect(got.acquired).toBe(true);
    const err = await rejection(leader.proclaim!(key, "o", "x".repeat(2 * 1024 * 1024)));
    expect(err.code, err.message).toBe("INVALID_ARGUMENT");
    expect((await leader.status(key))?.holders[0]?.value).toBeUndefined();
    expect(await leader.proclaim!(key, "o", "small")).toBe(true);
  });
});
