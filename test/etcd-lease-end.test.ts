// A lock on etcd ends at its own TTL by its host's timer while the host lives, whatever failed
// around it (issue 34, item 15). Each case runs on a private three-member cluster and kills the
// member host A talks to: a release that fails there, a renewal or proclamation that timed out
// (applied or not), or an acquisition whose answer was lost, must not leave the key held on A's
// class lease, which A's other locks of the same TTL keep alive for as long as A lives.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { etcdHealthy, startEtcdCluster, type EtcdCluster } from "./support/etcd-servers.js";
import { gateway, readKey } from "./support/etcd-gateway.js";
import { sleep } from "./support/until.js";
import { silent } from "./support/log.js";

const TTL_MS = 1_000;
/** How long B tries: far past the key's TTL plus A's class lease (1 s + 1 s margin, 2 s). */
const B_TRIES_MS = 15_000;

describe("etcd: a lock ends at its TTL while its host lives (private three-member cluster)", () => {
  let cluster: EtcdCluster;
  const opened: LockService[] = [];
  let n = 0;
  const prefix = `lease-end/${randomUUID().slice(0, 8)}/`;

  beforeAll(async () => {
    cluster = await startEtcdCluster(3);
  }, 60_000);
  afterAll(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  async function service(node: string, endpoints: string[]): Promise<LockService> {
    const config: EtcdConfig = { ...etcdDefaults, endpoints, keyPrefix: prefix, commandTimeoutMs: 3_000, leaseMarginMs: 1_000 };
    const s = new LockService(new EtcdBackend(config, silent), { node });
    opened.push(s);
    return s;
  }

  /** A takes other locks of the key's TTL class every 200 ms (its class lease stays in use) until `stop`. */
  function keepTaking(a: LockService, stop: { done: boolean }): Promise<void> {
    return (async () => {
      while (!stop.done) {
        const other = await a.tryLock(`other-${++n}`, { ttlMs: TTL_MS, keepalive: false }).catch(() => null);
        await sleep(200);
        if (other !== null) await a.release(other).catch(() => undefined);
      }
    })();
  }

  /** How long B waited for `key` (ms), or undefined when it never got it in B_TRIES_MS. */
  async function bWaits(b: LockService, key: string, kind: "mutex" | "fair" = "mutex"): Promise<number | undefined> {
    const t0 = performance.now();
    while (performance.now() - t0 < B_TRIES_MS) {
      const got = await b.tryLock(key, { ttlMs: TTL_MS, keepalive: false, ...(kind === "fair" && { fair: true }) }).catch(() => null);
      if (got !== null) {
        await b.release(got).catch(() => undefined);
        return performance.now() - t0;
      }
      await sleep(100);
    }
    return undefined;
  }

  it.each(["mutex", "fair"] as const)(
    "a %s whose release failed on a killed member is deleted at its TTL by its host's timer",
    async (kind) => {
      const member = cluster.members[0]!;
      const b = await service("b", cluster.endpoints.slice(1));
      const options = { ttlMs: TTL_MS, keepalive: false, ...(kind === "fair" && { fair: true }) } as const;
      const stop = { done: false };
      try {
        // A talks to member 0 first (B never does). The release reaches it, and it is killed before
        // it runs it (frozen a moment first, so A's client cannot move on to the next member): the
        // release fails at once, and the lock is A's until its TTL. A client that had already moved
        // on (a call that timed out on a loaded machine) releases on another member: tried again
        // with a fresh host A.
        let a: LockService | undefined;
        let key = "";
        for (let attempt = 1; a === undefined; attempt++) {
          const candidate = await service("a", cluster.endpoints);
          key = `k-${kind}-${++n}`;
          const held = (await candidate.tryLock(key, options))!;
          expect(held).not.toBeNull();
          member.pause();
          const releasing = candidate.release(held).then(
            () => undefined,
            (err: unknown) => err,
          );
          await sleep(100);
          await member.kill();
          const failed = await releasing;
          if (failed !== undefined) {
            expect(failed).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
            a = candidate;
          } else {
            expect(attempt, "A's release never reached member 0").toBeLessThan(4);
            await member.start();
            while (!(await etcdHealthy(member.endpoint))) await sleep(50);
          }
        }
        const taking = keepTaking(a, stop);
        const waited = await bWaits(b, key, kind);
        stop.done = true;
        await taking;
        const status = await b.status(key, kind === "fair" ? { kind: "fair" } : {});
        expect(waited, `B never got the key; status: ${JSON.stringify(status)}`).toBeDefined();
        console.log(`${kind}: B got the key after ${Math.round(waited!)} ms`);
      } finally {
        stop.done = true;
        await member.start();
        while (!(await etcdHealthy(member.endpoint))) await sleep(50);
      }
    },
    90_000,
  );

  it.each(["renewal", "proclamation"] as const)(
    "a key rewritten by a %s whose answer was lost ends at the end it records, not with the class lease",
    async (what) => {
      const a = await service("a", cluster.endpoints);
      const b = await service("b", cluster.endpoints);
      const key = `k-${what}-${++n}`;
      const etcdKey = `${prefix}m/global:${key}`;
      const held = (await a.tryLock(key, { ttlMs: TTL_MS, keepalive: false }))!;
      expect(held).not.toBeNull();
      // What a renewal (a later end) or a proclamation (a value) that etcd applied writes, while A
      // never heard its answer: the key's mod revision moves on behind A's book.
      const got = await gateway<{ kvs: { value: string; lease: string }[] }>(cluster.endpoints[1]!, "/v3/kv/range", {
        key: Buffer.from(etcdKey).toString("base64"),
      });
      const stored = JSON.parse(Buffer.from(got.kvs[0]!.value, "base64").toString("utf8")) as { e: number; v?: string };
      const endsAtMs = what === "renewal" ? Date.now() + 2 * TTL_MS : stored.e;
      const value = { ...stored, e: endsAtMs, ...(what === "proclamation" && { v: "x" }) };
      await gateway(cluster.endpoints[1]!, "/v3/kv/put", {
        key: Buffer.from(etcdKey).toString("base64"),
        value: Buffer.from(JSON.stringify(value)).toString("base64"),
        lease: got.kvs[0]!.lease,
      });
      const stop = { done: false };
      const taking = keepTaking(a, stop);
      try {
        const t0 = Date.now();
        const waited = await bWaits(b, key);
        const status = await b.status(key);
        expect(waited, `B never got the key; status: ${JSON.stringify(status)}`).toBeDefined();
        console.log(`${what}: B got the key ${Math.round(t0 + waited! - endsAtMs)} ms after its recorded end`);
        // Not before the end the key records: A's timer read it and waited for that end.
        expect(t0 + waited!).toBeGreaterThanOrEqual(endsAtMs);
      } finally {
        stop.done = true;
        await taking;
      }
      expect(await readKey(cluster.endpoints[1]!, etcdKey)).toBeUndefined();
    },
    60_000,
  );
});
