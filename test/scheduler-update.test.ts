// Scheduler.update (what a reload does to the schedules): changed schedules follow their new
// clock from the tick they waited for, removed ones stop and resign their elections, added ones
// start; and a timer that fires past later ticks says which it did not fire.
import { afterEach, describe, expect, it } from "vitest";
import type { LockingHint, ScheduledConfig } from "../host/config/types.js";
import { LockService } from "../host/locking/service.js";
import { Scheduler, type TickEvent } from "../host/scheduler/scheduler.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { startGuest } from "./support/guest.js";
import { captureLogger } from "./support/log.js";
import { sleep, until } from "./support/until.js";

const open: { scheduler: Scheduler; guest: GuestInstance; locks: LockService }[] = [];
afterEach(async () => {
  for (const { scheduler, guest, locks } of open.splice(0)) {
    scheduler.stop();
    await scheduler.idle();
    await scheduler.releaseParked();
    await guest.close();
    await locks.close();
  }
});

function schedule(id: string, everyMs: number, hint: LockingHint = "require_global", over: Partial<ScheduledConfig> = {}): ScheduledConfig {
  return {
    id,
    plugin: "test",
    export: "noop",
    schedule: { kind: "interval", everyMs, text: `${everyMs}ms` },
    hint,
    ttlMs: 5_000,
    keepalive: false,
    fair: false,
    ...over,
  };
}

async function scheduler(schedules: ScheduledConfig[]): Promise<{ scheduler: Scheduler; ticks: TickEvent[]; log: ReturnType<typeof captureLogger> }> {
  const log = captureLogger();
  const locks = new LockService(new MemoryBackend(), { node: "n" });
  const guest = await startGuest("locker", locks, log.logger);
  const s = new Scheduler(schedules, { locks, guest: () => guest, log: log.logger });
  open.push({ scheduler: s, guest, locks });
  const ticks: TickEvent[] = [];
  s.on("tick", (t) => ticks.push(t));
  return { scheduler: s, ticks, log };
}

describe("Scheduler.update", () => {
  it("a changed schedule fires next at its new clock's first time at or after the tick it waited for; none twice; counts kept", async () => {
    const { scheduler: s, ticks } = await scheduler([schedule("a", 200)]);
    s.start();
    await until("three ticks", 10_000, () => ticks.length >= 3);
    const changedAt = Date.now();
    expect(s.update([schedule("a", 600)])).toEqual({ added: [], changed: ["a"], removed: [] });
    await until("three more ticks", 15_000, () => ticks.filter((t) => t.tickAtMs > changedAt).length >= 3);
    const after = ticks.filter((t) => t.tickAtMs > changedAt + 200);
    for (const t of after) expect(t.tickAtMs % 600).toBe(0);
    const times = ticks.map((t) => t.tickAtMs);
    expect(new Set(times).size).toBe(times.length);
    expect(ticks.every((t) => t.outcome === "ran")).toBe(true);
    expect(s.ticks().a!.ran).toBe(ticks.length);
  });

  it("a removed schedule fires no more; an added one starts; an unchanged one keeps its timer", async () => {
    const { scheduler: s, ticks } = await scheduler([schedule("a", 200), schedule("b", 200)]);
    s.start();
    await until("ticks of both", 10_000, () => ticks.some((t) => t.id === "a") && ticks.some((t) => t.id === "b"));
    expect(s.update([schedule("b", 200), schedule("c", 200)])).toEqual({ added: ["c"], changed: [], removed: ["a"] });
    await s.idle();
    const removedAt = Date.now();
    await until("c ticks", 10_000, () => ticks.filter((t) => t.id === "c").length >= 2);
    await sleep(300);
    expect(ticks.filter((t) => t.id === "a" && t.tickAtMs > removedAt)).toEqual([]);
    const b = ticks.filter((t) => t.id === "b").map((t) => t.tickAtMs);
    expect(new Set(b).size).toBe(b.length);
    // Its counts stay readable.
    expect(s.ticks().a!.ran).toBeGreaterThan(0);
  });

  it("a removed leader_only schedule resigns its election; one added campaigns", async () => {
    const { scheduler: s } = await scheduler([schedule("lead", 200, "leader_only", { election: "e1" })]);
    s.start();
    await until("leads e1", 10_000, () => s.leaderTerm("e1") !== undefined);
    s.update([schedule("lead", 200, "leader_only", { election: "e2" })]);
    await until("resigned e1, leads e2", 10_000, () => s.leaderTerm("e1") === undefined && s.leaderTerm("e2") !== undefined);
    s.update([]);
    await until("resigned e2", 10_000, () => s.leaderTerm("e2") === undefined);
  });
});

describe("ticks a late timer did not fire", () => {
  it("are said in one line naming the first and last of them", async () => {
    const { scheduler: s, ticks, log } = await scheduler([schedule("a", 200)]);
    s.start();
    await until("a tick", 10_000, () => ticks.length >= 1);
    // Block the event loop past several ticks.
    const end = Date.now() + 900;
    while (Date.now() < end) {
      // busy
    }
    await until("the line", 10_000, () => log.messages().some((m) => m.startsWith("ticks not fired on this node")));
    const line = log.lines.find((l) => l.msg.startsWith("ticks not fired on this node"))!;
    expect(line).toMatchObject({ level: 40, schedule: "a" });
    const first = line.firstTickAtMs as number;
    const last = line.lastTickAtMs as number;
    expect(line.ticks).toBe((last - first) / 200 + 1);
    expect(line.ticks as number).toBeGreaterThanOrEqual(2);
    // None of them was fired.
    expect(ticks.filter((t) => t.tickAtMs >= first && t.tickAtMs <= last)).toEqual([]);
  });
});
