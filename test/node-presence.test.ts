// The warning that another live host uses this host's node name: each host holds the mutex
// lockhost:node:<name>; a host that finds it held by another, or loses it to another, looks
// again once a hold left by an ended run would have lapsed, and warns only if it is still held.
import { afterEach, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { NodePresence, presenceKey } from "../host/node-presence.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { captureLogger } from "./support/log.js";
import { sleep, until } from "./support/until.js";

const TTL_MS = 600;
const SCOPE = { plugin: "lockhost" } as const;
const open: { presence?: NodePresence; locks: LockService }[] = [];
afterEach(async () => {
  for (const { presence, locks } of open.splice(0)) {
    presence?.stop();
    await locks.close();
  }
});

function host(
  backend: MemoryBackend | ReturnType<typeof faultyBackend>["backend"],
  node: string,
): { presence: NodePresence; locks: LockService; log: ReturnType<typeof captureLogger> } {
  const log = captureLogger();
  const locks = new LockService(backend, { node });
  const presence = new NodePresence(locks, log.logger, TTL_MS);
  open.push({ presence, locks });
  return { presence, locks, log };
}

const warnings = (log: ReturnType<typeof captureLogger>) => log.lines.filter((l) => l.level === 40);

describe("node presence", () => {
  it("warns, once and naming the node, when another live host holds the same node name", async () => {
    const backend = new MemoryBackend();
    const a = host(backend, "twin");
    const b = host(backend, "twin");
    await a.presence.claim();
    await b.presence.claim();
    const status = await b.locks.status(presenceKey("twin"), { scope: SCOPE });
    expect(status.holders.map((h) => [h.node, h.plugin])).toEqual([["twin", "lockhost"]]);
    expect(a.locks.heldCount).toBe(1);
    // a renews its hold, so it is still held when b looks again.
    await until("b warns", 5_000, () => warnings(b.log).length > 0);
    expect(warnings(b.log)).toMatchObject([
      { node: "twin", msg: expect.stringMatching(/^another live host uses the node name "twin" \(it holds lockhost:node:twin\)/) },
    ]);
    await b.presence.claim(); // warned: it does not fight for the lock
    await sleep(TTL_MS * 2);
    expect(warnings(b.log)).toHaveLength(1);
    expect(warnings(a.log)).toEqual([]);
    expect([a.locks.heldCount, b.locks.heldCount]).toEqual([1, 0]);
  });

  it("warns when it loses its hold to another live host of its name (as a Redis reclaim takes it)", async () => {
    const backend = new MemoryBackend();
    const a = host(backend, "twin");
    await a.presence.claim();
    // Another process of the name takes the lock over and keeps it.
    const other = new LockService(backend, { node: "twin" });
    open.push({ locks: other });
    await other.forceRelease(presenceKey("twin"), { scope: SCOPE });
    expect(await other.try(presenceKey("twin"), { ttlMs: TTL_MS, scope: SCOPE, keepalive: true })).not.toBeNull();
    await until("a warns", 5_000, () => warnings(a.log).length > 0);
    expect(warnings(a.log)).toMatchObject([{ node: "twin", msg: expect.stringContaining('another live host uses the node name "twin"') }]);
  });

  it("does not warn about a hold left by a run that ended without releasing it (it lapses at its TTL, then is taken), nor about other node names", async () => {
    const backend = new MemoryBackend();
    const crashed = new LockService(backend, { node: "restarted" });
    open.push({ locks: crashed });
    // A run that crashed: its hold is not renewed.
    await crashed.try(presenceKey("restarted"), { ttlMs: TTL_MS, scope: SCOPE, keepalive: false });
    const other = host(backend, "someone-else");
    await other.presence.claim();
    const b = host(backend, "restarted");
    await b.presence.claim();
    expect(b.locks.heldCount).toBe(0);
    await until("b holds its presence once the stale hold lapsed", 5_000, () => b.locks.heldCount === 1);
    await sleep(TTL_MS);
    expect(warnings(b.log)).toEqual([]);
    expect(warnings(other.log)).toEqual([]);
  });

  it("claims again after a backend that did not answer answers (never rejects meanwhile)", async () => {
    const { backend, faults } = faultyBackend();
    const a = host(backend, "late");
    faults.loseAcquireReplies = 1;
    await a.presence.claim();
    expect(a.locks.heldCount).toBe(0);
    expect(a.log.lines.find((l) => l.msg === "node presence: not checked now")).toMatchObject({ level: 20, code: "BACKEND_UNAVAILABLE" });
    await a.presence.claim();
    // The lost reply left a hold nobody renews: it lapses, then this host takes it.
    await until("a holds its presence", 5_000, () => a.locks.heldCount === 1);
    expect(warnings(a.log)).toEqual([]);
  });
});
