// The scheduler on two nodes (two LockServices, each with its own guest) that share one
// memory backend, as two hosts of a cluster share Redis or PostgreSQL.
import { closeNodes } from "./support/scheduler-nodes.js";
import { afterEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import type { LockingHint, ScheduledConfig } from "../host/config/types.js";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { qualify } from "../host/locking/scope.js";
import { scheduleLockKey, Scheduler, type TickEvent } from "../host/scheduler/scheduler.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { unreachableBackend } from "./support/failing-backend.js";
import { startGuest } from "./support/guest.js";
import { captureLogger } from "./support/log.js";
import { sleep } from "./support/until.js";

interface Node {
  readonly name: string;
  readonly scheduler: Scheduler;
  readonly locks: LockService;
  readonly guest: GuestInstance;
  readonly log: ReturnType<typeof captureLogger>;
  readonly ticks: TickEvent[];
}

const nodes: Node[] = [];

function schedule(hint: LockingHint, over: Partial<ScheduledConfig> = {}): ScheduledConfig {
  return {
    id: "job",
    plugin: "test",
    export: "noop",
    schedule: { kind: "interval", everyMs: 200, text: "200ms" },
    hint,
    ttlMs: 5_000,
    keepalive: false,
    fair: false,
    ...over,
  };
}

async function node(name: string, backend: LockBackend, config: ScheduledConfig, callTimeoutMs = 5_000, wasm = "locker"): Promise<Node> {
  const log = captureLogger();
  const locks = new LockService(backend, { node: name });
  const guest = await startGuest(wasm, locks, log.logger, { callTimeoutMs });
  const scheduler = new Scheduler([config], { locks, guest: () => guest, log: log.logger });
  const ticks: TickEvent[] = [];
  scheduler.on("tick", (t) => ticks.push(t));
  const n = { name, scheduler, locks, guest, log, ticks };
  nodes.push(n);
  return n;
}

afterEach(() => closeNodes(nodes));

/** Ticks of both nodes by fire time, only for ticks both nodes saw. */
function byTick(a: Node, b: Node): Map<number, TickEvent[]> {
  const all = new Map<number, TickEvent[]>();
  for (const t of [...a.ticks, ...b.ticks]) all.set(t.tickAtMs, [...(all.get(t.tickAtMs) ?? []), t]);
  return new Map([...all].filter(([, ts]) => ts.length === 2));
}

describe("scheduler hints across two nodes", () => {
  it("require_global: exactly one node runs each tick, the other skips it", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("require_global"));
    const b = await node("b", backend, schedule("require_global"));
    a.scheduler.start();
    b.scheduler.start();
    await sleep(1_300);
    a.scheduler.stop();
    b.scheduler.stop();
    await Promise.all([a.scheduler.idle(), b.scheduler.idle()]);
    const ticks = byTick(a, b);
    expect(ticks.size).toBeGreaterThanOrEqual(4);
    for (const [, ts] of ticks) {
      expect(ts.map((t) => t.outcome).sort()).toEqual(["ran", "skipped_contended"]);
    }
    const fences = [...ticks.values()].map((ts) => ts.find((t) => t.outcome === "ran")!.fence!);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
    const skippedLog = [...a.log.lines, ...b.log.lines].filter((l) => l.msg === "tick skipped: another node holds the schedule lock");
    expect(skippedLog.length).toBe(ticks.size);
  });

  it("require_global: a node that fires the same tick late still skips it", async () => {
    const backend = new MemoryBackend();
    const config = schedule("require_global", { schedule: { kind: "interval", everyMs: 1_000, text: "1s" } });
    const a = await node("a", backend, config);
    const b = await node("b", backend, config);
    // An aligned fire time, as the timers use: the lock is then held until half a period
    // (500 ms) past it. (An unaligned Date.now() could leave under 100 ms of that.)
    const tick = Math.ceil(Date.now() / 1_000) * 1_000;
    expect(await a.scheduler.runTick("job", tick)).toBe("ran");
    await sleep(100); // b's timer is 100 ms late; a's job is long done
    expect(await b.scheduler.runTick("job", tick)).toBe("skipped_contended");
  });

  it("fair = true: a tick takes the schedule's fair mutex, and is skipped while anyone waits for it", async () => {
    const backend = new MemoryBackend();
    const config = schedule("require_global", { fair: true, schedule: { kind: "interval", everyMs: 1_000, text: "1s" } });
    const a = await node("a", backend, config);
    const tick = Math.ceil(Date.now() / 1_000) * 1_000;
    expect(await a.scheduler.runTick("job", tick)).toBe("ran");
    const lock = { scope: { plugin: "lockhost" } as const };
    expect(await a.locks.status(scheduleLockKey("job"), { ...lock, kind: "fair" })).toMatchObject({ kind: "fair", held: true });
    // The key's plain mutex is free, and its status says where the key is held.
    expect(await a.locks.status(scheduleLockKey("job"), lock)).toMatchObject({ held: false, heldElsewhere: [{ kind: "fair" }] });
    // A waiter of another host queues while the tick's lock is parked (its place, straight on the backend).
    const fair = backend.steps("fair");
    const name = qualify(scheduleLockKey("job"), lock.scope);
    const place = { name, owner: "waiter-1", ttlMs: 5_000, holder: { plugin: "other", node: "b" }, mode: "exclusive", limit: 0, queueMs: 10_000 } as const;
    expect((await fair.acquire(place)).acquired).toBe(false);
    await a.scheduler.releaseParked();
    // The key is free, but a tick's try yields to the waiter (a plain mutex would run it).
    expect(await a.scheduler.runTick("job", tick + 1_000)).toBe("skipped_contended");
    await fair.leaveQueue(name, place.owner);
    expect(await a.scheduler.runTick("job", tick + 2_000)).toBe("ran");
  });

  it("node_local: every node runs every tick, without a lock", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("node_local"));
    const b = await node("b", backend, schedule("node_local"));
    const tick = Date.now();
    expect(await a.scheduler.runTick("job", tick)).toBe("ran");
    expect(await b.scheduler.runTick("job", tick)).toBe("ran");
    expect(backend.size).toBe(0);
  });

  it("prefer_global: falls back to node_local on a backend that is not distributed, warning once", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("prefer_global"));
    const b = await node("b", backend, schedule("prefer_global"));
    for (let i = 0; i < 3; i++) {
      const tick = Date.now() + i;
      expect(await a.scheduler.runTick("job", tick)).toBe("ran");
      expect(await b.scheduler.runTick("job", tick)).toBe("ran");
    }
    for (const n of [a, b]) expect(n.log.lines.filter((l) => l.msg.startsWith("prefer_global:")).length).toBe(1);
  });

  it("prefer_global: takes the lock on a distributed backend (here: one that is down, so the tick is skipped)", async () => {
    const a = await node("a", unreachableBackend(), schedule("prefer_global"));
    expect(await a.scheduler.runTick("job")).toBe("skipped_error");
  });
});

describe("scheduler ticks on one node", () => {
  it("logs and skips a tick when the backend fails", async () => {
    const a = await node("a", unreachableBackend(), schedule("require_global"));
    expect(await a.scheduler.runTick("job")).toBe("skipped_error");
    const line = a.log.lines.find((l) => l.msg === "tick skipped: the schedule lock could not be taken")!;
    expect(line).toMatchObject({ schedule: "job", code: "BACKEND_UNAVAILABLE" });
  });

  it("never overlaps a schedule's ticks on one node", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("require_global", { export: "holdSpin" }), 400);
    const first = a.scheduler.runTick("job", 1_000);
    expect(await a.scheduler.runTick("job", 2_000)).toBe("skipped_overlap");
    expect(await first).toBe("failed"); // the spinning call hit its time limit
    expect(a.log.lines.some((l) => l.msg.startsWith("tick skipped: the previous tick"))).toBe(true);
  });

  it("releases the schedule lock after a failed call", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("require_global", { export: "holdTrap", schedule: { kind: "interval", everyMs: 50, text: "50ms" } }));
    expect(await a.scheduler.runTick("job", Date.now() - 1_000)).toBe("failed");
    expect((await a.locks.status({ name: "lockhost:schedule:job" })).held).toBe(false);
  });

  it("fires on a cron schedule", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("node_local", { schedule: { kind: "cron", expression: "* * * * * *" } }));
    a.scheduler.start();
    await sleep(2_200);
    a.scheduler.stop();
    await a.scheduler.idle();
    expect(a.ticks.length).toBeGreaterThanOrEqual(2);
    for (const t of a.ticks) expect(t.tickAtMs % 1_000).toBe(0);
  });
});

describe("scheduler robustness", () => {
  it("survives a tick listener that throws: logs it, releases the schedule lock, idle() resolves", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, schedule("require_global", { schedule: { kind: "interval", everyMs: 100, text: "100ms" } }));
    a.scheduler.on("tick", () => {
      throw new Error("listener boom");
    });
    // runTick resolves with the outcome even though a listener threw.
    expect(await a.scheduler.runTick("job", Date.now() - 1_000)).toBe("ran");
    // The timer path: ticks keep firing, no unhandled rejection (vitest would fail the run).
    a.scheduler.start();
    await sleep(450);
    a.scheduler.stop();
    await expect(a.scheduler.idle()).resolves.toBeUndefined();
    expect(a.ticks.filter((t) => t.outcome === "ran").length).toBeGreaterThanOrEqual(3);
    await sleep(100); // the last tick's lock is parked for half a period (50 ms)
    expect((await a.locks.status({ name: "lockhost:schedule:job" })).held).toBe(false);
    expect(a.locks.heldCount).toBe(0);
    const logged = a.log.lines.filter((l) => l.msg === "a tick listener threw; the tick itself is done");
    expect(logged.length).toBeGreaterThanOrEqual(4);
    expect(logged[0]).toMatchObject({ level: 50, schedule: "job", err: "listener boom" });
  });
});

describe("scheduler and the lease lifecycle", () => {
  const long = (over: Partial<ScheduledConfig>): ScheduledConfig =>
    schedule("require_global", { export: "scheduledJob", ttlMs: 250, schedule: { kind: "interval", everyMs: 60_000, text: "1m" }, ...over });

  it("keepalive = true keeps the schedule lock held while a job outlasts its TTL", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, long({ keepalive: true }), 5_000, "lifecycle");
    const b = await node("b", backend, long({ keepalive: true }), 5_000, "lifecycle");
    const tick = Date.now() - 1_000;
    const ran = a.scheduler.runTick("job", tick);
    await sleep(500); // twice the TTL into the 700 ms job
    expect((await b.locks.status({ name: "lockhost:schedule:job" })).held).toBe(true);
    expect(await b.scheduler.runTick("job", tick)).toBe("skipped_contended");
    expect(await ran).toBe("ran");
    expect(a.ticks[0]).toMatchObject({ outcome: "ran", fence: 1 });
    expect(a.ticks[0]!.lockLost).toBeUndefined();
    expect(a.log.lines.some((l) => l.msg === `guest: scheduled job done, state ${S.STATE_HELD}`)).toBe(true);
    expect(a.locks.stats().lost).toBe(0);
  });

  it("tells the tick event, the log and the job (lockhost_on_lost(0)) when the schedule lock is lost", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, long({ keepalive: false }), 5_000, "lifecycle");
    expect(await a.scheduler.runTick("job", Date.now() - 1_000)).toBe("ran");
    expect(a.ticks[0]).toMatchObject({ outcome: "ran", lockLost: true });
    expect(a.log.lines.find((l) => l.msg.startsWith("schedule lock lost while the job ran"))).toMatchObject({ level: 50, schedule: "job" });
    expect(a.log.lines.some((l) => l.msg === `guest: scheduled job done, state ${S.STATE_LOST}`)).toBe(true);
    for (let i = 0; i < 100 && (await a.guest.call("lostCount")) === 0; i++) await sleep(20);
    expect(await a.guest.call("lostCount")).toBe(1);
    expect(await a.guest.call("lostAt", [0])).toBe(0);
  });
});
