// hint = "leader_only": three nodes (three LockServices sharing one memory backend, as hosts share
// Redis or PostgreSQL) campaign once in the background; every tick runs on the leader only, with
// no lock taken per tick, and moves to another node when the leader resigns.
import { closeNodes } from "./support/scheduler-nodes.js";
import { afterEach, describe, expect, it } from "vitest";
import type { ScheduledConfig } from "../host/config/types.js";
import { LockService } from "../host/locking/service.js";
import { Scheduler, type TickEvent } from "../host/scheduler/scheduler.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { startGuest } from "./support/guest.js";
import { captureLogger } from "./support/log.js";
import { sleep } from "./support/until.js";

interface Node {
  readonly name: string;
  readonly scheduler: Scheduler;
  readonly locks: LockService;
  readonly guest: GuestInstance;
  readonly ticks: TickEvent[];
}

const nodes: Node[] = [];

const config: ScheduledConfig = {
  id: "job",
  plugin: "test",
  export: "noop",
  schedule: { kind: "interval", everyMs: 50, text: "50ms" },
  hint: "leader_only",
  election: "jobs",
  ttlMs: 5_000,
  keepalive: false,
  fair: false,
};

async function node(name: string, backend: MemoryBackend): Promise<Node> {
  const log = captureLogger();
  const locks = new LockService(backend, { node: name });
  const guest = await startGuest("locker", locks, log.logger);
  const scheduler = new Scheduler([config], { locks, guest: () => guest, log: log.logger });
  const ticks: TickEvent[] = [];
  scheduler.on("tick", (t) => ticks.push(t));
  const n = { name, scheduler, locks, guest, ticks };
  nodes.push(n);
  return n;
}

afterEach(() => closeNodes(nodes));

describe('scheduler hint "leader_only"', () => {
  it("runs every tick on the leader only, without a lock per tick, and moves when it resigns", async () => {
    const backend = new MemoryBackend();
    const all = [await node("a", backend), await node("b", backend), await node("c", backend)];
    for (const n of all) n.scheduler.start();
    const until = performance.now() + 2_000;
    let leader: Node | undefined;
    while (!(leader = all.find((n) => n.scheduler.leaderTerm("jobs") !== undefined)) && performance.now() < until) await sleep(5);
    expect(leader).toBeDefined();
    const acquisitions = all.map((n) => n.locks.stats().acquisitions);
    await sleep(400);
    const ran = (n: Node): TickEvent[] => n.ticks.filter((t) => t.outcome === "ran");
    expect(ran(leader!).length).toBeGreaterThanOrEqual(4);
    for (const n of all) if (n !== leader) expect(ran(n)).toHaveLength(0);
    // No lock traffic per tick: nobody took a lock while the ticks ran.
    expect(all.map((n) => n.locks.stats().acquisitions)).toEqual(acquisitions);
    const firstTerm = leader!.scheduler.leaderTerm("jobs")!;
    expect(ran(leader!).every((t) => t.fence === firstTerm)).toBe(true);

    await leader!.scheduler.resignLeaders();
    const others = all.filter((n) => n !== leader);
    let next: Node | undefined;
    const until2 = performance.now() + 2_000;
    while (!(next = others.find((n) => n.scheduler.leaderTerm("jobs") !== undefined)) && performance.now() < until2) await sleep(5);
    expect(next).toBeDefined();
    expect(next!.scheduler.leaderTerm("jobs")!).toBeGreaterThan(firstTerm);
    const before = ran(leader!).length;
    await sleep(300);
    expect(ran(next!).length).toBeGreaterThanOrEqual(3);
    expect(ran(leader!).length).toBeLessThanOrEqual(before + 1);
    const third = others.find((n) => n !== next)!;
    expect(ran(third)).toHaveLength(0);
  });
});
