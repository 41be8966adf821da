// A leader process that dies sends no notice: on PostgreSQL its session ends and frees the
// advisory lock with no NOTIFY; on Redis its lease runs to its TTL. Observers and waiting
// campaigners of other processes must still see it gone, and take over, soon after the backend
// frees it — not a poll interval later. Real processes, killed with SIGKILL and paused with
// SIGSTOP. The bound here is generous (a loaded CI machine); bench/ measures the lag itself.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import type { LeaderInfo } from "../host/locking/leader-watch.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import type { LockBackend } from "../kit/backend.js";
import { percentile } from "../testing/election-contract.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";
import { silent } from "./support/log.js";

const TABLE = `lockhost_test_election_kill_${randomUUID().slice(0, 8)}`;
const PREFIX = `lockhost-test-election-kill:${randomUUID().slice(0, 8)}:`;
const CHILD = fileURLToPath(new URL("./support/leader-host.mjs", import.meta.url));
/** The child leader's lease. */
const TTL_MS = 1_000;
/** The most a lost leader may go unseen (observers) or untaken (campaigners) past the moment it is freed. */
const BOUND_MS = 300;
/** Rounds per backend: each one kills a fresh leader. */
const ROUNDS = Number(process.env.ELECTION_KILL_ROUNDS ?? 3);

afterAll(async () => {
  await dropPgTable(databaseUrl(), TABLE);
  await dropRedisPrefix(redisUrl(), PREFIX);
});

const targets: { name: "pg" | "redis"; url: string; where: string; create: () => LockBackend }[] = [
  { name: "pg", url: databaseUrl(), where: TABLE, create: () => new PgBackend({ ...pgDefaults, url: databaseUrl(), table: TABLE }, silent) },
  {
    name: "redis",
    url: redisUrl(),
    where: PREFIX,
    create: () => new RedisBackend({ url: redisUrl(), keyPrefix: PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent),
  },
];

/** A child leader: its process, and its stdout events as they come. */
interface Child {
  readonly process: ChildProcess;
  readonly exited: Promise<unknown>;
  /** Resolves with the first event having `field`. */
  next(field: "leading" | "lost"): Promise<Record<string, unknown>>;
}

function startLeader(target: (typeof targets)[number], election: string): Child {
  const child = spawn(process.execPath, [CHILD, target.name, target.url, target.where, election, String(TTL_MS)], { stdio: ["ignore", "pipe", "inherit"] });
  const events: Record<string, unknown>[] = [];
  const waiting: { field: string; resolve: (e: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const event = JSON.parse(line) as Record<string, unknown>;
    events.push(event);
    for (const w of waiting.splice(0))
      if (w.field in event) w.resolve(event);
      else waiting.push(w);
  });
  return {
    process: child,
    exited: new Promise((r) => child.once("exit", r)),
    next: (field) => {
      const seen = events.find((e) => field in e);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiting.push({ field, resolve }));
    },
  };
}

describe.each(targets)("a killed leader: $name", (target) => {
  it(`is seen gone by observers and replaced by a waiting campaigner within ${BOUND_MS} ms of the backend freeing it`, async () => {
    const host = new LockService(target.create(), { node: "survivor" });
    const seenLags: number[] = [];
    const takeLags: number[] = [];
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const election = `kill-${randomUUID().slice(0, 8)}`;
        const child = startLeader(target, election);
        const term = Number((await child.next("leading")).leading);
        const stop = new AbortController();
        const observed: { info: LeaderInfo; atMs: number }[] = [];
        const observing = (async () => {
          for await (const info of host.observe(election, { signal: stop.signal })) observed.push({ info, atMs: Date.now() });
        })();
        const campaigning = host.campaign(election, { ttlMs: 10_000, value: "survivor" }).then((l) => ({ leadership: l, atMs: Date.now() }));
        // Let the observer and campaigner settle into their waits before the kill.
        await new Promise((r) => setTimeout(r, 150));
        expect(observed.at(-1)?.info).toMatchObject({ held: true, term, node: "doomed" });
        child.process.kill("SIGKILL");
        await child.exited;
        // When the backend frees the leadership: pg at once (the session dies with the process);
        // Redis when the lease's TTL runs out, on the server's clock (the same machine's here).
        const freedAtMs = target.name === "pg" ? Date.now() : ((await host.leader(election)).expiresAtMs ?? Date.now());
        const { leadership, atMs: tookAtMs } = await campaigning;
        const gone = (o: { info: LeaderInfo }): boolean => !o.info.held || o.info.term !== term;
        // The observer may hear of it after the campaigner took over: wait for it, far past the bound.
        for (const until = Date.now() + 5_000; !observed.some(gone) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 5));
        const seen = observed.find(gone);
        stop.abort();
        await observing;
        expect(seen).toBeDefined();
        expect(leadership.term).toBeGreaterThan(term);
        seenLags.push(seen!.atMs - freedAtMs);
        takeLags.push(tookAtMs - freedAtMs);
        await leadership.resign();
      }
    } finally {
      await host.close();
    }
    const report = (xs: number[]): string => `p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms, max ${Math.max(...xs)} ms`;
    console.log(`[${target.name}] killed leader seen gone: ${report(seenLags)}; taken over: ${report(takeLags)}`);
    for (const lag of [...seenLags, ...takeLags]) expect(lag).toBeLessThan(BOUND_MS);
  }, 60_000);

  it("a paused leader past its TTL learns it lost when it resumes, and no two lead one term", async () => {
    const host = new LockService(target.create(), { node: "survivor" });
    const election = `pause-${randomUUID().slice(0, 8)}`;
    const child = startLeader(target, election);
    try {
      const term = Number((await child.next("leading")).leading);
      let took: { term: number; atMs: number } | undefined;
      const campaigning = host.campaign(election, { ttlMs: 10_000, value: "survivor" }).then((l) => {
        took = { term: l.term, atMs: Date.now() };
        return l;
      });
      child.process.kill("SIGSTOP");
      const pausedAtMs = Date.now();
      await new Promise((r) => setTimeout(r, 3 * TTL_MS));
      if (target.name === "redis") {
        // Its lease ran out on the server: the waiting campaigner leads, with a higher term.
        expect(took).toBeDefined();
        expect(took!.term).toBeGreaterThan(term);
        expect(took!.atMs - pausedAtMs).toBeLessThan(TTL_MS + BOUND_MS);
      } else {
        // Its session lives and keeps the advisory lock: nobody else may lead meanwhile.
        expect(took).toBeUndefined();
        expect(await host.leader(election)).toMatchObject({ held: true, term, node: "doomed" });
      }
      child.process.kill("SIGCONT");
      // Resumed past its deadline, it ends its lease on its own clock: it says it lost.
      const lost = await Promise.race([child.next("lost"), new Promise((r) => setTimeout(() => r(undefined), 5_000))]);
      expect(lost).toMatchObject({ lost: term });
      const leadership = await campaigning;
      expect(leadership.term).toBeGreaterThan(term);
      expect(await host.leader(election)).toMatchObject({ held: true, term: leadership.term, node: "survivor" });
      await leadership.resign();
    } finally {
      child.process.kill("SIGKILL");
      await child.exited;
      await host.close();
    }
  }, 60_000);
});
