// A scheduled call never runs without its lock (issue 34 item 1), with real guests in every
// runtime this Node has, on two hosts sharing one backend: a tick takes its lock only when an
// instance of its plugin is free to run it now (else it is skipped as an overlap, taking no
// lock), the lease is checked right before the export is entered, and `instances = N` lets a
// plugin's quick schedule run beside its long one.
import { afterEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import type { Runtime } from "../abi/ops.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import type { ScheduledInput } from "../host/config/types.js";
import { Host } from "../host/host.js";
import { LockService } from "../host/locking/service.js";
import type { GuestInstance, GuestReservation } from "../host/runtime/guest-instance.js";
import { GuestPool } from "../host/runtime/guest-pool.js";
import { Scheduler, type TickEvent } from "../host/scheduler/scheduler.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { sleep } from "./support/until.js";

/** Whether `guest` has no free instance now (a reservation it gives is given back at once). */
function busyNow(guest: GuestInstance): boolean {
  const r = guest.reserve();
  r?.cancel();
  return r === undefined;
}

/** Waits for `ok()` (checked every 20 ms) up to `ms` (a bound load cannot eat), else fails naming `what`. */
async function until(what: string, ms: number, ok: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The long job (2.5 s, keepalive) and the quick one (short TTL, no keepalive) of the repro. */
const LONG: ScheduledInput = { id: "long", plugin: "jobs", export: "longJob", schedule: "1h", hint: "require_global", ttlMs: 1_000, keepalive: true };
const QUICK: ScheduledInput = { id: "quick", plugin: "jobs", export: "quickJob", schedule: "500ms", hint: "require_global", ttlMs: 1_000, keepalive: false };
const QUICK_LOCK = "lockhost:schedule:quick";

interface Node {
  readonly host: Host;
  readonly log: ReturnType<typeof captureLogger>;
  readonly ticks: TickEvent[];
}

const hosts: Host[] = [];

afterEach(async () => {
  for (const h of hosts) h.scheduler.stop();
  await Promise.all(hosts.splice(0).map((h) => h.stop(10_000)));
});

/** The state of the schedule lock each quickJob call saw as it was entered, from the guest's trace. */
function quickEntries(n: Node): number[] {
  return n.log.lines.flatMap((l) => {
    const m = /^guest: quick job start state (-?\d+)$/.exec(l.msg);
    return m ? [Number(m[1])] : [];
  });
}

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime: Runtime) => {
  async function node(name: string, backend: MemoryBackend, instances: number, scheduled: readonly ScheduledInput[] = [LONG, QUICK]): Promise<Node> {
    const log = captureLogger();
    const input: ConfigInput = {
      source: "lockhost.toml",
      host: { node: name },
      plugins: [{ name: "jobs", wasm: guestWasm("lifecycle"), isolation: runtime, ...(runtime === "worker" && { callTimeoutMs: 30_000 }), instances }],
      scheduled,
    };
    const host = await Host.start(resolveConfig(input), { logger: log.logger, backend });
    hosts.push(host);
    const ticks: TickEvent[] = [];
    host.scheduler.on("tick", (t) => ticks.push(t));
    return { host, log, ticks };
  }

  /** Starts the long job on `n` by hand and resolves once its export runs (its lock taken), with its outcome to come. */
  async function startLong(n: Node): Promise<{ readonly outcome: Promise<string> }> {
    const outcome = n.host.scheduler.runTick("long");
    await until("the long job to start", 20_000, () => n.log.lines.some((l) => l.msg === "schedule lock taken; running" && l.schedule === "long"));
    return { outcome };
  }

  it("repro: a quick tick meeting its only instance busy with a long job is skipped as an overlap, takes no lock, and never runs late without it", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, 1);
    const b = await node("b", backend, 1);
    a.host.scheduler.start();
    b.host.scheduler.start();
    const long = await startLong(a);
    // Ticks fire on both hosts while the long job holds a's only instance.
    await until("quick ticks skipped on a while its instance is busy", 20_000, () => a.host.scheduler.ticks().quick!.skipped_overlap >= 2);
    expect(await long.outcome).toBe("ran");
    // And after it: a runs quick ticks again.
    const before = a.ticks.filter((t) => t.id === "quick" && t.outcome === "ran").length;
    await until("a to run quick ticks again", 20_000, () => a.ticks.filter((t) => t.id === "quick" && t.outcome === "ran").length > before);
    for (const h of [a, b]) h.host.scheduler.stop();
    await Promise.all([a, b].map((h) => h.host.scheduler.idle()));

    // Every quick call was entered with its lock held; none lost it, none ran on both hosts.
    const entries = [...quickEntries(a), ...quickEntries(b)];
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.filter((s) => s !== S.STATE_HELD)).toEqual([]);
    const quick = [...a.ticks, ...b.ticks].filter((t) => t.id === "quick");
    expect(quick.filter((t) => t.lockLost)).toEqual([]);
    expect(quick.filter((t) => t.outcome === "skipped_lost")).toEqual([]);
    const ranAt = quick.filter((t) => t.outcome === "ran").map((t) => t.tickAtMs);
    expect(ranAt.length).toBe(entries.length);
    expect(new Set(ranAt).size).toBe(ranAt.length);
    for (const h of [a, b]) expect(h.log.lines.filter((l) => l.msg.startsWith("schedule lock lost while the job ran"))).toEqual([]);
    // Each skip is counted and logged as a busy instance, and took no lock.
    const overlaps = a.host.scheduler.ticks().quick!.skipped_overlap;
    const busy = a.log.lines.filter((l) => l.schedule === "quick" && l.msg.startsWith("tick skipped: every instance of plugin jobs is busy (instances = 1)"));
    expect(busy.length).toBe(overlaps);
    expect(busy[0]).toMatchObject({ level: 40, plugin: "jobs", instances: 1 });
    const busyTicks = new Set(busy.map((l) => l.tickAtMs));
    expect(a.log.lines.filter((l) => l.schedule === "quick" && l.msg === "schedule lock taken; running" && busyTicks.has(l.tickAtMs))).toEqual([]);
  });

  it("a skipped tick leaves the lock to the other host, which runs it under the lock", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, 1);
    const b = await node("b", backend, 1);
    const long = await startLong(a);
    const tick = Date.now();
    expect(await a.host.scheduler.runTick("quick", tick)).toBe("skipped_overlap");
    expect((await a.host.locks.status({ name: QUICK_LOCK })).held).toBe(false);
    expect(await b.host.scheduler.runTick("quick", tick)).toBe("ran");
    expect(quickEntries(b)).toEqual([S.STATE_HELD]);
    expect(quickEntries(a)).toEqual([]);
    expect(a.host.scheduler.ticks().quick).toMatchObject({ ran: 0, skipped_overlap: 1 });
    expect(await long.outcome).toBe("ran");
    // Nothing queued behind the long job: no quick call ran on a afterwards.
    await sleep(200);
    expect(quickEntries(a)).toEqual([]);
  });

  it("ticks that fire together on one instance take turns: both run, one after the other, each under its lock", async () => {
    const backend = new MemoryBackend();
    const other: ScheduledInput = { ...QUICK, id: "quick2" };
    const a = await node("a", backend, 1, [QUICK, other]);
    const tick = Date.now();
    expect(await Promise.all([a.host.scheduler.runTick("quick", tick), a.host.scheduler.runTick("quick2", tick)])).toEqual(["ran", "ran"]);
    expect(quickEntries(a)).toEqual([S.STATE_HELD, S.STATE_HELD]);
  });

  it("a tick waiting for a busy instance gives up when the scheduler stops (skipped_overlap, no lock)", async () => {
    const backend = new MemoryBackend();
    // A period of 1 h: the tick could wait up to 15 min for the instance.
    const a = await node("a", backend, 1, [LONG, { ...QUICK, schedule: "1h" }]);
    const long = await startLong(a);
    const waiting = a.host.scheduler.runTick("quick");
    await sleep(100);
    a.host.scheduler.stop();
    const first = await Promise.race([waiting.then((o) => `quick ${o}`), long.outcome.then((o) => `long ${o}`)]);
    expect(first).toBe("quick skipped_overlap");
    expect((await a.host.locks.status({ name: QUICK_LOCK })).held).toBe(false);
    expect(await long.outcome).toBe("ran");
    expect(quickEntries(a)).toEqual([]);
  });

  it("a tick waits for a busy instance at most half its lock's TTL: never takes it once the winner's may have ended; no tick runs on two nodes", async () => {
    // Period 20 s (a quarter: 5 s), TTL 400 ms: the winner's lock ends long before b's only
    // instance is free again (the long job, 2.5 s). Waiting a quarter period, b took the lock
    // after that and ran the tick a had run.
    const backend = new MemoryBackend();
    const short: ScheduledInput = { ...QUICK, schedule: "20s", ttlMs: 400 };
    const a = await node("a", backend, 1, [LONG, short]);
    const b = await node("b", backend, 1, [LONG, short]);
    const long = await startLong(b);
    const tickAtMs = Date.now();
    expect(await a.host.scheduler.runTick("quick", tickAtMs)).toBe("ran");
    expect(await b.host.scheduler.runTick("quick", tickAtMs)).toBe("skipped_overlap");
    expect(quickEntries(b)).toEqual([]);
    expect(await long.outcome).toBe("ran");
  });

  it("instances = 2: the quick schedule and a call run beside the long job", async () => {
    const backend = new MemoryBackend();
    const a = await node("a", backend, 2);
    expect(a.host.guest("jobs").size).toBe(2);
    const long = await startLong(a);
    expect(await a.host.scheduler.runTick("quick")).toBe("ran");
    expect(quickEntries(a)).toEqual([S.STATE_HELD]);
    expect(await a.host.call("jobs", "add", [2, 3])).toBe(5);
    expect(a.host.scheduler.ticks().quick).toMatchObject({ ran: 1, skipped_overlap: 0 });
    // Both instances busy (the long job, and a second long one by hand): the quick tick is skipped.
    const second = a.host.call("jobs", "longJob");
    await until("the second instance to be busy", 20_000, () => busyNow(a.host.guest("jobs")));
    expect(await a.host.scheduler.runTick("quick")).toBe("skipped_overlap");
    expect(a.log.lines.some((l) => l.msg.startsWith("tick skipped: every instance of plugin jobs is busy (instances = 2)"))).toBe(true);
    expect(await long.outcome).toBe("ran");
    await second;
  });
});

describe.each(GUEST_RUNTIMES)("the lease check at entry, %s runtime", (runtime: Runtime) => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function guestOn(locks: LockService, log: ReturnType<typeof captureLogger>): Promise<GuestInstance> {
    const guest = await startGuest("lifecycle", locks, log.logger, { runtime, plugin: "jobs" });
    closers.push(() => guest.close());
    return guest;
  }

  function service(): LockService {
    const locks = new LockService(new MemoryBackend(), { node: "a" });
    closers.push(async () => void (await locks.close()));
    return locks;
  }

  it("a schedule lock force-released between the take and the entry: the export is not called; the tick is counted skipped_lost and logged", async () => {
    const locks = service();
    const log = captureLogger();
    const guest = await guestOn(locks, log);
    // The instance, as the scheduler sees it, with the lock force-released once the tick took it
    // and just before its reserved call starts.
    const between = new Proxy(guest, {
      get(target, prop) {
        if (prop === "reserve") {
          return (): GuestReservation | undefined => {
            const r = target.reserve();
            return (
              r && {
                ...r,
                call: async (name, args, options) => {
                  expect(await locks.forceRelease({ name: QUICK_LOCK })).toBe(1);
                  return r.call(name, args, options);
                },
              }
            );
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const scheduler = new Scheduler(
      [
        {
          id: "quick",
          plugin: "jobs",
          export: "quickJob",
          schedule: { kind: "interval", everyMs: 500, text: "500ms" },
          hint: "require_global",
          ttlMs: 5_000,
          keepalive: false,
          fair: false,
        },
      ],
      { locks, guest: () => between, log: log.logger },
    );
    closers.push(() => scheduler.releaseParked());
    const ticks: TickEvent[] = [];
    scheduler.on("tick", (t) => ticks.push(t));
    expect(await scheduler.runTick("quick")).toBe("skipped_lost");
    expect(quickEntries({ log } as Node)).toEqual([]);
    expect(ticks).toEqual([expect.objectContaining({ id: "quick", outcome: "skipped_lost", fence: 1 })]);
    expect(ticks[0]!.runMs).toBeUndefined();
    expect(scheduler.ticks().quick).toMatchObject({ ran: 0, failed: 0, skipped_lost: 1 });
    const line = log.lines.find((l) => l.msg === "tick not run: its schedule lock was gone when the job was to start");
    expect(line).toMatchObject({ level: 50, schedule: "quick", lock: QUICK_LOCK, fence: 1 });
    expect(String(line!.err)).toContain(`plugin jobs export quickJob was not called: its schedule lock ${QUICK_LOCK} was lost`);
    // The instance is free again and runs the next tick under its lock.
    const plain = new Scheduler(
      [
        {
          id: "quick",
          plugin: "jobs",
          export: "quickJob",
          schedule: { kind: "interval", everyMs: 500, text: "500ms" },
          hint: "require_global",
          ttlMs: 5_000,
          keepalive: false,
          fair: false,
        },
      ],
      { locks, guest: () => guest, log: log.logger },
    );
    closers.push(() => plain.releaseParked());
    expect(await plain.runTick("quick", Date.now() + 10_000)).toBe("ran");
    expect(quickEntries({ log } as Node)).toEqual([S.STATE_HELD]);
  });

  it("a call under a lease with no time left is not made: LOST, details.entered 0, the guest not entered", async () => {
    const locks = service();
    const log = captureLogger();
    const guest = await guestOn(locks, log);
    const lease = (await locks.tryLock("schedule:short", { ttlMs: 50, scope: { plugin: "lockhost" }, keepalive: false }))!;
    expect(lease).not.toBeNull();
    await until("the lease to run out", 20_000, () => performance.now() > lease.deadline);
    await expect(guest.call("quickJob", [], { scheduleLease: lease })).rejects.toMatchObject({ code: "LOST", details: { entered: 0 } });
    // Released: the same.
    const released = (await locks.tryLock("schedule:released", { ttlMs: 5_000, scope: { plugin: "lockhost" } }))!;
    await locks.release(released);
    await expect(guest.call("quickJob", [], { scheduleLease: released })).rejects.toMatchObject({
      code: "LOST",
      message: expect.stringContaining("was released before the call could start"),
    });
    expect(quickEntries({ log } as Node)).toEqual([]);
    // The guest runs on.
    expect(await guest.call("add", [1, 2])).toBe(3);
  });
});

describe("a pool of instances", () => {
  it("runs each call on a free instance, queues the rest until one is free, and adds up held locks", async () => {
    const locks = new LockService(new MemoryBackend(), { node: "a" });
    const log = captureLogger();
    const members = await Promise.all([0, 1].map(() => startGuest("lifecycle", locks, log.logger, { plugin: "jobs" })));
    const pool = new GuestPool(members);
    try {
      expect(pool.size).toBe(2);
      // Two long calls take both instances; a third waits for the first to be free.
      const first = pool.call("job", [600]);
      const second = pool.call("job", [600]);
      await until("both instances busy", 20_000, () => members.every(busyNow));
      expect(busyNow(pool)).toBe(true);
      let settled = 0;
      const queued = [pool.call("add", [1, 1]), pool.call("add", [2, 2])].map((p) => p.finally(() => settled++));
      // They wait for a free instance: not run while both long calls run.
      const longDone = Promise.race([first, second]).then(() => settled);
      const [third, fourth] = await Promise.all(queued);
      expect([third, fourth]).toEqual([2, 4]);
      expect(await longDone).toBe(0);
      await Promise.all([first, second]);
      // Locks are each instance's own (a kept lock stays with its instance); the pool adds them up.
      expect(await pool.call("hold", [1, 5_000, S.FLAG_KEEP])).toBeGreaterThan(0);
      expect(pool.heldLocks).toBe(1);
      // A reservation given back frees its instance.
      const r = pool.reserve()!;
      r.cancel();
      expect(await pool.call("add", [3, 3])).toBe(6);
    } finally {
      await pool.close();
      await locks.close();
    }
    await expect(pool.call("add", [1, 1])).rejects.toMatchObject({ code: "CLOSED" });
  });
});
