// Node presence through a backend outage (issue 34, item 8): a host whose presence hold it
// counted lost while the backend did not answer, but which the backend kept (etcd keeps a live
// host's lease and keys through a restart), knows the hold by its owner token, takes its name
// again and warns about no one; a real second host of the name is still warned about after it.
// Private servers: a one-member etcd that is stopped and restarted, a Redis that is frozen.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { NodePresence, presenceKey } from "../host/node-presence.js";
import type { LockBackend } from "../kit/index.js";
import { EtcdBackend, etcdDefaults } from "../plugins/backends/etcd/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { etcdHealthy, startEtcdCluster } from "./support/etcd-servers.js";
import { captureLogger, silent } from "./support/log.js";
import { redisAnswers, startRedisServer } from "./support/servers.js";
import { sleep, until } from "./support/until.js";

// Long enough that etcd keeps the hold's lease (its class: 4 s) through the restart and until
// the host's keepalives reach it again, as with the default presence TTL (10 s).
const TTL_MS = 3_000;
const OUTAGE_MS = 5_000;
const SCOPE = { plugin: "lockhost" } as const;

interface Host {
  readonly node: string;
  readonly backend: LockBackend;
  readonly locks: LockService;
  readonly presence: NodePresence;
  readonly log: ReturnType<typeof captureLogger>;
}

const open: Host[] = [];
afterAll(async () => {
  for (const h of open.splice(0)) {
    h.presence.stop();
    await h.locks.close().catch(() => undefined);
  }
});

function host(backend: LockBackend, node: string): Host {
  const log = captureLogger();
  const locks = new LockService(backend, { node });
  const h = { node, backend, locks, presence: new NodePresence(locks, log.logger, TTL_MS), log };
  open.push(h);
  return h;
}

const warnings = (h: Host) => h.log.lines.filter((l) => l.level === 40);
/** Whether `h` holds its presence lock now, as the backend says. */
const holdsName = async (h: Host): Promise<boolean> =>
  h.locks.heldCount === 1 && (await h.locks.status(presenceKey(h.node), { scope: SCOPE }).catch(() => ({ held: false }))).held;

interface Outage {
  readonly backend: () => Promise<LockBackend>;
  readonly down: () => Promise<void>;
  readonly up: () => Promise<void>;
  readonly stop: () => Promise<void>;
}

async function etcdOutage(): Promise<Outage> {
  const cluster = await startEtcdCluster(1);
  const member = cluster.members[0]!;
  const prefix = `presence/${randomUUID().slice(0, 8)}/`;
  return {
    backend: async () =>
      new EtcdBackend({ ...etcdDefaults, endpoints: cluster.endpoints, keyPrefix: prefix, commandTimeoutMs: 500, leaseMarginMs: 1_000 }, silent),
    down: () => member.kill(),
    up: async () => {
      await member.start();
      while (!(await etcdHealthy(member.endpoint))) await sleep(50);
    },
    stop: () => cluster.stop(),
  };
}

async function redisOutage(): Promise<Outage> {
  const server = await startRedisServer();
  const prefix = `presence:${randomUUID().slice(0, 8)}:`;
  return {
    backend: async () => new RedisBackend({ url: server.url, keyPrefix: prefix, commandTimeoutMs: 500, reclaimOwnLocks: false }, silent),
    down: async () => server.pause(),
    up: async () => {
      server.resume();
      while (!(await redisAnswers(server.url))) await sleep(50);
    },
    stop: () => server.stop(),
  };
}

describe("node presence after an outage", () => {
  it.each([
    ["etcd", etcdOutage],
    ["redis", redisOutage],
  ] as const)(
    "%s: each host takes its own name again after the backend is back, and a real twin is still warned about",
    async (_, make) => {
      const outage = await make();
      try {
        const a = host(await outage.backend(), "a");
        const b = host(await outage.backend(), "b");
        await a.presence.claim();
        await b.presence.claim();
        expect([await holdsName(a), await holdsName(b)]).toEqual([true, true]);
        await outage.down();
        // Long enough for each host to count its hold lost (its renewals fail past its TTL).
        await sleep(OUTAGE_MS);
        await outage.up();
        // What the host's health does once its backend answers again.
        await Promise.all(
          [a, b].map(async (h) => {
            await until(`${h.node}'s backend answers`, 20_000, () =>
              h.backend.ping().then(
                () => true,
                () => false,
              ),
            );
            await h.presence.claim();
          }),
        );
        await until("both hold their names again", 20_000, async () => (await holdsName(a)) && (await holdsName(b))).catch((err: Error) => {
          throw new Error(`${err.message}; warnings: ${JSON.stringify([...warnings(a), ...warnings(b)].map((l) => l.msg.slice(0, 60)))}`);
        });
        // Past the time a recheck would have warned.
        await sleep(TTL_MS + 1_000);
        expect(warnings(a).map((l) => l.msg)).toEqual([]);
        expect(warnings(b).map((l) => l.msg)).toEqual([]);
        // A second host named "a" is a twin: it is warned about, and a keeps its name.
        const twin = host(await outage.backend(), "a");
        await twin.presence.claim();
        await until("the twin warns", 20_000, () => warnings(twin).length > 0);
        expect(warnings(twin)[0]).toMatchObject({ node: "a", msg: expect.stringContaining('another live host uses the node name "a"') });
        expect(await holdsName(a)).toBe(true);
        expect(warnings(a)).toEqual([]);
      } finally {
        for (const h of open.splice(0)) {
          h.presence.stop();
          await h.locks.close().catch(() => undefined);
        }
        await outage.stop();
      }
    },
    90_000,
  );
});
