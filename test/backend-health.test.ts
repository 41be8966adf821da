// The host's view of its backend's health: a warning at start when it does not answer, a fail
// at start when it refuses for good, and each change logged once while the host runs.
import { describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import { BackendHealth } from "../host/backend-health.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { captureLogger } from "./support/log.js";

/** A memory backend whose ping fails while `down` says so, the way `fault` says. */
function flaky(): { backend: MemoryBackend; state: { down: boolean; fault: LockhostError } } {
  const backend = new MemoryBackend();
  const state = { down: false, fault: new LockhostError("BACKEND_UNAVAILABLE", "no answer (test)") };
  backend.ping = () => (state.down ? Promise.reject(state.fault) : Promise.resolve());
  return { backend, state };
}

describe("backend health", () => {
  it("logs the backend going down once at warn and coming back once at info", async () => {
    const { backend, state } = flaky();
    const locks = new LockService(backend, { node: "n" });
    const log = captureLogger();
    const health = await BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]");
    expect(health.up).toBe(true);
    state.down = true;
    expect(await health.check()).toBe(false);
    expect(await health.check()).toBe(false);
    state.down = false;
    expect(await health.check()).toBe(true);
    const said = log.lines.filter((l) => l.msg.includes("backend"));
    expect(said.map((l) => [l.level, l.msg])).toEqual([
      [40, "the memory backend stopped answering; lock calls fail with BACKEND_UNAVAILABLE until it answers again"],
      [30, "the memory backend answers again"],
    ]);
    await locks.close();
  });

  it("warns at start when the backend does not answer, and fails the start when it refuses for good", async () => {
    const { backend, state } = flaky();
    const locks = new LockService(backend, { node: "n" });
    const log = captureLogger();
    state.down = true;
    const health = await BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]");
    expect(health.up).toBe(false);
    expect(log.lines.find((l) => l.level === 40)).toMatchObject({ err: "no answer (test)", msg: expect.stringContaining("does not answer at start") });
    state.fault = new LockhostError("BACKEND_UNAVAILABLE", "password refused (test)", { details: { permanent: 1 } });
    await expect(BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: "lockhost.toml: [locking.memory]: the memory backend refused this host for good, so retrying cannot help: password refused (test)",
    });
    await locks.close();
  });
});
