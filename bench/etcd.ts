// Bench part "etcd", on a private three-member etcd cluster on loopback (data in memory where
// the machine has /dev/shm), or on ETCD_ENDPOINTS when set:
// 1. a mutex try+release pair one at a time: the LockService, and the backend's bare steps, vs a
//    raw lock by transaction on the same client (put-if-absent on a lease granted once, then
//    delete-if-create-revision): the target is the LockService ≤ 1.3x raw at p50;
// 2. handoff: host A releases, host B (another backend instance, waiting in acquire) holds:
//    release call → B's acquire resolved, p50 (target ≤ 5 ms on three members).
// No maintained Node etcd lock exists to compare with (the etcd3 package's Lock tries once and
// returns no fence), so the raw transaction is the baseline.
import { randomUUID } from "node:crypto";
import { LockService } from "../host/locking/service.js";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { EtcdClient } from "../plugins/backends/etcd/client.js";
import { CMP, TARGET } from "../plugins/backends/etcd/proto.js";
import { startEtcdCluster, type EtcdCluster } from "../test/support/etcd-servers.js";
import { benchLog, fmt, interleaved, ROUNDS, row, sequential, TTL_MS } from "./harness.js";
import { median, quantile, table } from "./stats.js";

const OPS = Number(process.env.BENCH_ETCD_OPS ?? 500);
const HANDOFFS = Number(process.env.BENCH_ETCD_HANDOFFS ?? 60);

export async function etcdBench(): Promise<void> {
  let cluster: EtcdCluster | undefined;
  const endpoints = process.env.ETCD_ENDPOINTS?.split(",") ?? (cluster = await startEtcdCluster(3)).endpoints;
  const config: EtcdConfig = { ...etcdDefaults, endpoints, keyPrefix: `lockhost-bench/${randomUUID().slice(0, 8)}/` };
  const raw = new EtcdClient(config, benchLog);
  const backend = new EtcdBackend(config, benchLog);
  const locks = new LockService(backend, { node: "bench" });
  const other = new LockService(new EtcdBackend(config, benchLog), { node: "bench-b" });
  const steps = backend.steps("mutex");
  // Long enough for the whole part: the raw lock keeps no lease alive.
  const rawLease = await raw.leaseGrant(3_600);
  const holder = { plugin: "bench", node: "bench" };

  const rawKey = `${config.keyPrefix}raw`;
  const rawPair = async (): Promise<void> => {
    const got = await raw.txn({
      compare: [{ key: rawKey, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: 0 }],
      success: [{ request_put: { key: rawKey, value: "owner", lease: rawLease.id } }],
    });
    if (!got.succeeded) throw new Error("raw: not acquired");
    await raw.txn({
      compare: [{ key: rawKey, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: got.header.revision }],
      success: [{ request_delete_range: { key: rawKey } }],
    });
  };
  let n = 0;
  const stepsPair = async (): Promise<void> => {
    const owner = `o-${++n}`;
    const got = await steps.acquire({ name: "steps", owner, ttlMs: TTL_MS, holder, mode: "exclusive", limit: 0, queueMs: 0 });
    if (!got.acquired) throw new Error("steps: not acquired");
    await steps.release("steps", owner);
  };
  const servicePair = async (): Promise<void> => {
    const lease = await locks.tryLock("direct", { ttlMs: TTL_MS, keepalive: false });
    if (!lease) throw new Error("service: not acquired");
    await locks.release(lease);
  };

  try {
    const m = await interleaved({
      raw: () => sequential(OPS, rawPair),
      steps: () => sequential(OPS, stepsPair),
      service: () => sequential(OPS, servicePair),
    });
    const where = cluster === undefined ? endpoints.join(",") : `a private ${cluster.members.length}-member cluster on loopback`;
    console.log(`\nlockhost bench: etcd at ${where} (${ROUNDS} rounds x ${OPS} pairs, medians)\n`);
    console.log("mutex try+release one at a time vs a raw lock by transaction on the same client (ratio: p50; target LockService ≤ 1.3x)\n");
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "x raw"],
        [
          row("raw txn put-if-absent on a lease + delete-if-revision", m.raw!, m.raw),
          row("EtcdBackend steps (acquire + release)", m.steps!, m.raw),
          row("LockService tryLock + release", m.service!, m.raw),
        ],
      ),
    );

    // Handoff to a waiter on another host (backend instance).
    const handoffMs: number[] = [];
    for (let i = 0; i < HANDOFFS; i++) {
      const key = `handoff-${i}`;
      const held = (await locks.tryLock(key, { ttlMs: TTL_MS, keepalive: false }))!;
      let resolvedAt = 0;
      const waiting = other.acquire(key, { ttlMs: TTL_MS, waitMs: 10_000, keepalive: false }).then((l) => {
        resolvedAt = performance.now();
        return l;
      });
      // Let the waiter try once and start watching.
      await new Promise((r) => setTimeout(r, 30));
      const t0 = performance.now();
      await locks.release(held);
      const got = await waiting;
      handoffMs.push(resolvedAt - t0);
      await other.release(got);
    }
    console.log(`\nhandoff: release on host A → acquire resolved on host B (${HANDOFFS} handoffs; target p50 ≤ 5 ms)\n`);
    console.log(
      table(
        ["path", "p50 ms", "p90 ms", "max ms"],
        [["etcd watch wake-up, another backend instance", fmt(median(handoffMs), 2), fmt(quantile(handoffMs, 0.9), 2), fmt(Math.max(...handoffMs), 2)]],
      ),
    );
  } finally {
    await locks.close();
    await other.close();
    await raw.leaseRevoke(rawLease.id).catch(() => undefined);
    raw.close();
    await cluster?.stop();
  }
}
