// Schedules a plugin declares itself (issue 14): a short [[scheduled]] entry (plugin and hint,
// maybe an export, no schedule) runs what the plugin's lockhost_schedules() says; an entry that
// spells its schedule wins for its export; every bad declaration is a CONFIG_INVALID naming the
// file, the entry, the plugin and the line. In every runtime this Node has.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import { parseConfig, resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { LockService } from "../host/locking/service.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { expandScheduled, parseDeclaredSchedules } from "../host/scheduler/declared.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";

const WHERE = `lockhost.toml: [[scheduled]] "@acme/cron": plugin @acme/cron`;

describe("a declaration", () => {
  it("reads one '<export> <schedule>' a line, intervals and cron, skipping blanks and comments", () => {
    expect(parseDeclaredSchedules("# jobs\ntick 5s\n\n  nightly   0 3 * * *  \nsecs */10 * * * * *\r\n", WHERE)).toEqual([
      { export: "tick", schedule: { kind: "interval", everyMs: 5_000, text: "5s" }, line: 2 },
      { export: "nightly", schedule: { kind: "cron", expression: "0 3 * * *" }, line: 4 },
      { export: "secs", schedule: { kind: "cron", expression: "*/10 * * * * *" }, line: 5 },
    ]);
    expect(parseDeclaredSchedules("", WHERE)).toEqual([]);
  });

  it.each([
    ["a line without a schedule", "tick", `line 1 must be "<export> <schedule>"`],
    ["a schedule that is neither", "tick every-day", `line 1 has a schedule that is neither an interval`],
    ["a zero interval", "tick 0s", `line 1 has a schedule that is neither an interval`],
    ["a bad cron expression", "tick 99 * * * *", `line 1 has an invalid cron expression`],
    ["a cron expression that never fires", "\ntick 0 0 30 2 *", `line 2 has a cron expression that never fires`],
    ["an export declared twice", "tick 5s\ntick 1m", `line 2 declares export tick again (first on line 1)`],
    ["a name that is no export name", "9lives 5s", `line 1 names no export`],
  ])("refuses %s, naming the plugin and the line", (_what, text, message) => {
    expect(() => parseDeclaredSchedules(text, WHERE)).toThrow(
      expect.objectContaining({ code: "CONFIG_INVALID", message: expect.stringContaining(`${WHERE}: lockhost_schedules() ${message}`) }),
    );
  });
});

describe("a short [[scheduled]] entry in the config", () => {
  const PLUGIN = `[[plugins]]\nname = "@acme/cron"\nwasm = "cron.wasm"\n`;
  const parse = (text: string) => parseConfig(text, { source: "lockhost.toml", baseDir: "/srv", env: {} });

  it("takes a plugin and a hint alone: every schedule the plugin declares, id the plugin's name", () => {
    const config = parse(`${PLUGIN}[[scheduled]]\nplugin = "@acme/cron"\nhint = "require_global"`);
    expect(config.scheduled).toEqual([
      {
        id: "@acme/cron",
        plugin: "@acme/cron",
        export: "*",
        schedule: { kind: "declared" },
        hint: "require_global",
        ttlMs: 60_000,
        keepalive: false,
        fair: false,
      },
    ]);
    // Round-trips through resolveConfig, as every loaded config does.
    expect(resolveConfig(config).scheduled).toEqual(config.scheduled);
  });

  it("takes an export without a schedule: that export's declared one", () => {
    const config = parse(`${PLUGIN}[[scheduled]]\nplugin = "@acme/cron"\nexport = "tick"\nttl_ms = 5000`);
    expect(config.scheduled[0]).toMatchObject({ id: "@acme/cron.tick", export: "tick", schedule: { kind: "declared" }, ttlMs: 5_000 });
  });

  it("refuses a schedule without an export, and export '*' with a schedule, naming the file, entry and key", () => {
    expect(() => parse(`${PLUGIN}[[scheduled]]\nplugin = "@acme/cron"\nschedule = "5s"`)).toThrow(
      `lockhost.toml: [[scheduled]] #1: export is required when schedule is given (leave both out to run every schedule the plugin declares)`,
    );
    expect(() => parse(`${PLUGIN}[[scheduled]]\nplugin = "@acme/cron"\nexport = "*"\nschedule = "5s"`)).toThrow(
      `lockhost.toml: [[scheduled]] #1 ("@acme/cron"): export may be "*" only without a schedule (every schedule the plugin declares)`,
    );
  });
});

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime: Runtime) => {
  const hosts: Host[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
  });
  const plugin = { name: "@acme/cron", wasm: guestWasm("cron"), isolation: runtime };

  async function start(input: ConfigInput): Promise<{ host: Host; log: ReturnType<typeof captureLogger> }> {
    const log = captureLogger();
    const host = await Host.start(resolveConfig({ source: "lockhost.toml", ...input }), { logger: log.logger, backend: new MemoryBackend() });
    hosts.push(host);
    return { host, log };
  }

  it("runs the schedules a plugin declares for an entry with only plugin and hint", async () => {
    const { host, log } = await start({ plugins: [plugin], scheduled: [{ plugin: "@acme/cron", hint: "require_global" }] });
    expect(host.schedules.map((s) => [s.id, s.export, s.schedule])).toEqual([
      ["@acme/cron.tick", "tick", { kind: "interval", everyMs: 200, text: "200ms" }],
      ["@acme/cron.nightly", "nightly", { kind: "cron", expression: "0 3 * * *" }],
    ]);
    expect(await host.scheduler.runTick("@acme/cron.tick")).toBe("ran");
    expect(log.messages()).toContain("guest: tick 1");
    // The schedule's lock is the one a spelled entry would take: its id derives alike.
    expect(host.config.scheduled[0]!.schedule).toEqual({ kind: "declared" });
  });

  it("lets an entry that spells its schedule win over the declaration for that export", async () => {
    const { host } = await start({
      plugins: [plugin],
      scheduled: [{ plugin: "@acme/cron" }, { plugin: "@acme/cron", export: "tick", schedule: "1h" }, { id: "late", plugin: "@acme/cron", export: "nightly" }],
    });
    expect(host.schedules.map((s) => [s.id, s.export, s.schedule])).toEqual([
      ["@acme/cron.tick", "tick", { kind: "interval", everyMs: 3_600_000, text: "1h" }],
      ["late", "nightly", { kind: "cron", expression: "0 3 * * *" }],
    ]);
  });

  it("refuses, at start, a plugin that declares nothing or not the export named", async () => {
    await expect(
      start({ plugins: [{ name: "locker", wasm: guestWasm("locker"), isolation: runtime }], scheduled: [{ plugin: "locker" }] }),
    ).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message:
        `lockhost.toml: [[scheduled]] "locker": plugin locker declares no schedules (it does not export lockhost_schedules(): string or ` +
        `lockhost_schedules_utf8() -> i64); spell export and schedule in the entry`,
    });
    await expect(start({ plugins: [plugin], scheduled: [{ plugin: "@acme/cron", export: "other" }] })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message:
        `lockhost.toml: [[scheduled]] "@acme/cron.other": plugin @acme/cron declares no schedule for export other (it declares: tick, ` +
        `nightly); spell schedule in the entry`,
    });
    await expect(start({ plugins: [plugin], scheduled: [{ plugin: "@acme/cron", export: "nighlty" }] })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message:
        `lockhost.toml: [[scheduled]] "@acme/cron.nighlty": plugin @acme/cron declares no schedule for export nighlty (did you mean ` +
        `"nightly"? it declares: tick, nightly); spell schedule in the entry`,
    });
  });

  describe("a declaration read from the guest", () => {
    let locks: LockService;
    let guest: GuestInstance;
    beforeEach(async () => {
      locks = new LockService(new MemoryBackend(), { node: "n" });
      guest = await startGuest("cron", locks, captureLogger().logger, { runtime, plugin: "@acme/cron" });
    });
    afterEach(async () => {
      await guest.close();
      await locks.close();
    });
    const config = resolveConfig({ source: "lockhost.toml", plugins: [plugin], scheduled: [{ plugin: "@acme/cron" }] });

    it("that is malformed is a CONFIG_INVALID naming the line; the guest runs on", async () => {
      await guest.call("declare", ["tick 5s\nnightly at three"]);
      await expect(expandScheduled(config, new Map([["@acme/cron", guest]]))).rejects.toMatchObject({
        code: "CONFIG_INVALID",
        message:
          `${WHERE}: lockhost_schedules() line 2 has a schedule that is neither an interval ("500ms", "5s", "1m", "2h") nor a cron expression ` +
          `of 5 or 6 fields, got "nightly at three"`,
      });
      expect(await guest.call("tickCount")).toBe(0);
    });

    it("that declares an export the plugin lacks fails the export check", async () => {
      await guest.call("declare", ["missing 5s"]);
      const expanded = await expandScheduled(config, new Map([["@acme/cron", guest]]));
      expect(expanded.map((s) => s.id)).toEqual(["@acme/cron.missing"]);
      const { checkScheduledExports } = await import("../host/host.js");
      expect(() => checkScheduledExports(config, new Map([["@acme/cron", guest]]), expanded)).toThrow(
        `lockhost.toml: [[scheduled]] "@acme/cron.missing": plugin @acme/cron has no export "missing"`,
      );
    });

    it("a string result that is no string is INVALID_MEMORY, not a trap", async () => {
      await expect(guest.callString("notAString")).rejects.toMatchObject({
        code: "INVALID_MEMORY",
        message: expect.stringContaining("plugin @acme/cron: export notAString returned"),
      });
      await expect(guest.callString("tick")).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("must return a string") });
      expect(await guest.callString("lockhost_schedules")).toContain("tick 200ms");
    });
  });
});
