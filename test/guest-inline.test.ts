// What only the inline runtime does, or refuses: how `isolation` resolves at config load on
// this Node, a start function that calls a lock function, and a guest closed while its lock
// call is parked. The behaviour both runtimes share runs in guest-runtime.test.ts,
// guest-lifecycle.test.ts and abi.test.ts, once per runtime.
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { parseConfig } from "../host/config/load.js";
import { LockService } from "../host/locking/service.js";
import { prepareGuest } from "../host/runtime/prepare-guest.js";
import { InlineGuest } from "../host/runtime/inline/inline-guest.js";
import { jspiAvailable } from "../host/runtime/jspi.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { startGuest, startWorkerGuest } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { guestFixture } from "./support/guest-fixture.js";
import { captureLogger } from "./support/log.js";

const JSPI = jspiAvailable();
const plugin = (extra: string): string => `[[plugins]]\nname = "p"\nwasm = "p.wasm"\n${extra}\n`;
const resolved = (extra: string) => parseConfig(plugin(extra), { source: "lockhost.toml", baseDir: "/srv" }).plugins[0]!;
const refusal = (extra: string): string => {
  try {
    resolved(extra);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the config was accepted");
};

describe("isolation at config load, on this Node", () => {
  it("keeps worker the default, whatever the Node", () => {
    expect(resolved("")).toMatchObject({ isolation: "worker", runtime: "worker" });
  });

  it("resolves auto to inline where JSPI exists and no time limit is set, else to worker", () => {
    expect(resolved('isolation = "auto"').runtime).toBe(JSPI ? "inline" : "worker");
    expect(resolved('isolation = "auto"\ncall_timeout_ms = 2000')).toMatchObject({ runtime: "worker", callTimeoutMs: 2000 });
  });

  it("takes inline where JSPI exists, and refuses it elsewhere naming the Node it needs", () => {
    if (JSPI) {
      expect(resolved('isolation = "inline"').runtime).toBe("inline");
    } else {
      expect(refusal('isolation = "inline"')).toBe(
        `lockhost.toml: [[plugins]] #1 ("p"): isolation "inline" is not available on this Node: it needs WebAssembly JSPI: Node 26 or later, or Node ` +
          `24 started with --experimental-wasm-jspi (this is Node ${process.versions.node}); use "worker", or "auto" to fall back to it`,
      );
    }
  });

  it("refuses a time limit on an inline guest, naming the key, since nothing can stop it mid-call", () => {
    const message = refusal('isolation = "inline"\ncall_timeout_ms = 2000');
    expect(message).toContain('lockhost.toml: [[plugins]] #1 ("p"): ');
    // Where JSPI is missing that is said first; where it exists, the time limit is the fault.
    if (JSPI) expect(message).toContain('call_timeout_ms cannot be honoured with isolation = "inline"');
  });
});

describe.runIf(!JSPI)("the inline runtime on a Node without JSPI", () => {
  it("refuses to start an inline guest built in code, with RUNTIME_UNAVAILABLE and the Node it needs", async () => {
    const locks = new LockService(new MemoryBackend(), { node: "n" });
    const log = captureLogger().logger;
    const shell = await prepareGuest(locks, log, { plugin: "p", wasm: guestWasm("locker"), memoryLimitMib: 4 });
    await expect(InlineGuest.start(shell)).rejects.toMatchObject({
      code: "RUNTIME_UNAVAILABLE",
      message: expect.stringContaining(`this is Node ${process.versions.node}`),
    });
    await locks.close();
  });
});

describe.runIf(JSPI)("the inline runtime", () => {
  const fx = guestFixture("n");

  it("refuses a module whose start function calls a lock function, saying why; the worker answers it -INVALID_ARGUMENT", async () => {
    await expect(startGuest("startlock", fx.locks, fx.log.logger, { runtime: "inline" })).rejects.toMatchObject({
      code: "ABI_UNSUPPORTED",
      message: expect.stringContaining("calls a lock function while it instantiates (top-level code or start function)"),
    });
    const worker = fx.track(await startWorkerGuest("startlock", fx.locks, fx.log.logger));
    expect(await worker.call("early")).toBe(-S.INVALID_ARGUMENT);
  });

  it("releases a lock whose acquisition completes after its guest was closed, and never resumes that guest", async () => {
    const { backend, inner, faults } = faultyBackend();
    const service = new LockService(backend, { node: "n" });
    const a = await startGuest("locker", service, fx.log.logger, { runtime: "inline" });
    faults.acquireDelayMs = 200; // the guest is parked in lock.try when it is closed
    const call = a.call("hold", [41, 60_000, S.FLAG_KEEP]);
    await new Promise((r) => setTimeout(r, 50));
    await a.close();
    await expect(call).rejects.toMatchObject({ code: "CLOSED", message: expect.stringContaining("during hold") });
    await new Promise((r) => setTimeout(r, 300));
    expect(inner.size).toBe(0);
    expect(service.heldCount).toBe(0);
    await service.close();
  });

  it("keeps the host's event loop running while a guest waits for a lock", async () => {
    const holder = await startGuest("locker", fx.locks, fx.log.logger, { runtime: "inline" });
    const waiter = await startGuest("lifecycle", fx.locks, fx.log.logger, { runtime: "inline" });
    fx.track(holder);
    fx.track(waiter);
    const h = (await holder.call("hold", [7, 60_000, S.FLAG_KEEP])) as number;
    const waiting = waiter.call("acquireKey", [7, 10_000, 5_000, 0]);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    await new Promise((r) => setTimeout(r, 100));
    expect(ticks).toBeGreaterThan(5);
    expect(await holder.call("release", [h])).toBe(S.OK);
    expect(await waiting).toBeGreaterThan(0);
    clearInterval(timer);
  });
});
