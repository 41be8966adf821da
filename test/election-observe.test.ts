// observe() lets go of what it watches as soon as its signal aborts, even while its consumer
// holds the iterator without pulling it (a generator suspended at a yield runs no finally).
import { describe, expect, it } from "vitest";
import type { ReleaseWatch } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";

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
