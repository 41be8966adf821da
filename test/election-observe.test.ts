// observe() lets go of what it watches as soon as its signal aborts, even while its consumer
// holds the iterator without pulling it (a generator suspended at a yield runs no finally); and,
// on every backend, it never shows a term before its leader's proclamation (a campaign wins the
// key, then proclaims: two writes), so an observer never sees a leader with a value it did not
// campaign with.
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { ReleaseWatch } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import type { LeaderInfo } from "../host/locking/leader-watch.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { EtcdBackend, etcdDefaults } from "../plugins/backends/etcd/index.js";
import { hostsOn, PG_TABLE, REDIS_PREFIX, queueBackends } from "./support/queue-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { etcdEndpoints } from "./support/etcd-servers.js";
import { databaseUrl, redisUrl } from "./support/servers.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

/** A memory backend that counts the release watches open now. */
class CountingBackend extends MemoryBackend {
  open = 0;
  override watch(key: string, listener: () => void): ReleaseWatch {
    const inner = super.watch(key, listener);
    this.open++;
    let closed = false;
    return {
      ready: inner.ready,
      close: () => {
        if (!closed) this.open--;
        closed = true;
        inner.close();
      },
    };
  }
}

describe("observing an election", () => {
  it("closes its watch when the signal aborts, though the consumer never calls return()", async () => {
    const backend = new CountingBackend();
    const locks = new LockService(backend, { node: "n" });
    const leader = await locks.campaign("jobs", { ttlMs: 10_000, value: "a" });
    const controller = new AbortController();
    const iterator = locks.observe("jobs", { signal: controller.signal });
    expect((await iterator.next()).value).toMatchObject({ held: true, value: "a" });
    expect(backend.open).toBeGreaterThan(0);
    // The consumer stops pulling and aborts; it never calls iterator.return().
    controller.abort();
    expect(backend.open).toBe(0);
    await leader.resign();
    await locks.close();
  });
});

const ETCD_PREFIX = `observe-test/${randomUUID().slice(0, 8)}/`;
const etcdTarget = {
  name: "etcd",
  distributed: true,
  create: () => new EtcdBackend({ ...etcdDefaults, endpoints: etcdEndpoints(), keyPrefix: ETCD_PREFIX }, pino({ level: "silent" })),
};

for (const target of [...queueBackends(), etcdTarget]) {
  describe(`observing an election: ${target.name}`, () => {
    it("never shows a term before its leader proclaimed what it campaigned with", async () => {
      const fleet = hostsOn(target);
      try {
        const [a, b, watcher] = await fleet.hosts(3);
        const election = `observe-${randomUUID().slice(0, 8)}`;
        const controller = new AbortController();
        const seen: LeaderInfo[] = [];
        const observing = (async () => {
          for await (const info of watcher!.observe(election, { signal: controller.signal })) seen.push(info);
        })();
        // Leadership passes back and forth: each resignation wakes the observer while the waiting
        // campaigner wins the key, before it proclaims.
        let leader = await a!.campaign(election, { ttlMs: 10_000, value: "a-0" });
        // The first term is seen before it ends, as each later one is below (an observer that
        // subscribed only after a-0 resigned, slow on a loaded machine, could not see it).
        const first = performance.now() + 10_000;
        while (!seen.some((i) => i.value === "a-0") && performance.now() < first) await new Promise((r) => setTimeout(r, 10));
        for (let round = 1; round <= 6; round++) {
          const [next, host] = round % 2 === 1 ? ["b", b!] : ["a", a!];
          const campaigning = host.campaign(election, { ttlMs: 10_000, value: `${next}-${round}` });
          await new Promise((r) => setTimeout(r, 50));
          await leader.resign();
          leader = await campaigning;
          const want = `${next}-${round}`;
          const until = performance.now() + 10_000;
          while (!seen.some((i) => i.value === want) && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
        }
        await leader.resign();
        controller.abort();
        await observing;
        const held = seen.filter((i) => i.held);
        expect(held.map((i) => i.value)).toEqual(["a-0", "b-1", "a-2", "b-3", "a-4", "b-5", "a-6"].filter((v) => held.some((i) => i.value === v)));
        expect(
          held.filter((i) => i.value === ""),
          JSON.stringify(seen.map((i) => [i.term, i.value])),
        ).toEqual([]);
        // Every term was seen, each with its own value.
        expect(new Set(held.map((i) => i.value)).size).toBe(7);
      } finally {
        await fleet.close();
      }
    }, 60_000);
  });
}
