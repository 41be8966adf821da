// Extism plugins take lockhost locks, in every runtime this Node has: an @extism/as-pdk plugin
// (test/guests/extism/locks.ts) calls the lock functions (extism:host/user, JSON in and out,
// abi/extism.ts) for every lock form (try, acquire, release, renew, fence, state, status,
// owner, read/write, semaphore, leader), gets the native ABI's results and status codes, has
// the locks it forgets released when its call returns, and writes through a real HTTP server
// behind lockhost/fence with its lock's fence, refused once it is stale.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import * as S from "../abi/status.js";
import { fenceGuard, fenceOf } from "../fence/index.js";
import { FENCE_HEADER, KIND_HEADER, LOCK_HEADER } from "../fence/headers.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import type { HttpGrant } from "../host/runtime/capabilities/http/index.js";
import { GUEST_RUNTIMES, startGuest, startWorkerGuest, type TestGuestOptions } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";

const fx = guestFixture();

/** A lock function's reply. */
interface Reply {
  result: number;
  code?: string;
  message?: string;
  value?: unknown;
}

/** Calls lock_<op> through the plugin's call_<op> export with `args` as its JSON. */
async function lock(g: GuestInstance, op: string, args: unknown): Promise<Reply> {
  return JSON.parse(await g.callString(`call_${op}`, [typeof args === "string" ? args : JSON.stringify(args)])) as Reply;
}

const grant: HttpGrant = {
  allowedHosts: ["127.0.0.1:*"],
  methods: ["GET", "POST"],
  timeoutMs: 2_000,
  maxRequestBytes: 1 << 20,
  maxResponseBytes: 100_000,
  headers: {},
  allowPrivateRanges: ["127.0.0.0/8"],
  maxRedirects: 0,
} as HttpGrant;

/** Resources behind lockhost/fence the cases start; closed after all. */
const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(
    servers.map((s) => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(resolve));
    }),
  );
});

/** A real node:http resource behind lockhost/fence's guard: what it accepted ("lock fence body") and refused ("status error"). */
async function fencedResource(): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const guard = fenceGuard({ onRefused: (r) => seen.push(`${r.status} ${r.error}`) });
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () =>
      guard(req, res, () => {
        const f = fenceOf(req)!;
        seen.push(`${f.lock} ${f.fence} ${body}`);
        res.end(`stored under fence ${f.fence}`);
      }),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ledger`, seen };
}

describe.each(GUEST_RUNTIMES)("Extism plugins' locks (%s runtime)", (runtime: Runtime) => {
  const start = async (options: TestGuestOptions = {}) => fx.track(await startGuest("extism-locks", fx.locks, fx.log.logger, { runtime, ...options }));
  const KEEP = S.FLAG_KEEP;

  it("tries, reads the fence, owner, state and status, renews and releases, with the native results", async () => {
    const g = await start();
    const taken = await lock(g, "try", { key: "k", ttl_ms: 5_000, flags: KEEP });
    expect(taken.result).toBeGreaterThan(0);
    const handle = taken.result;
    expect(await lock(g, "fence", { handle })).toEqual({ result: 1 });
    expect(await lock(g, "state", { handle })).toEqual({ result: S.STATE_HELD });
    const owner = await lock(g, "owner", { handle });
    expect(owner.value).toMatch(/^[0-9a-f-]{36}$/);
    expect(owner.result).toBe(36);
    const status = await lock(g, "status", { key: "k" });
    expect(status.value).toMatchObject({ held: true, fence: 1 });
    expect(await lock(g, "renew", { handle, ttl_ms: 0 })).toEqual({ result: 0 });
    expect(await lock(g, "release", { handle })).toEqual({ result: 0 });
    expect(await lock(g, "state", { handle })).toEqual({ result: S.STATE_RELEASED });
    expect(await lock(g, "release", { handle })).toMatchObject({ result: -S.ALREADY_RELEASED, code: "ALREADY_RELEASED", message: expect.any(String) });
    expect(await lock(g, "fence", { handle: 9999 })).toMatchObject({ result: -S.INVALID_HANDLE, code: "INVALID_HANDLE" });
    // Fences keep increasing across holders.
    const again = await lock(g, "try", { key: "k", ttl_ms: 5_000 });
    expect(await lock(g, "status", { key: "k" })).toMatchObject({ value: { held: false } });
    expect(again.result).toBeGreaterThan(0);
  });

  it("finds a held key contended (0, not an error), and waits in acquire until the holder lets go", async () => {
    const a = await start();
    const b = await start();
    const held = await lock(a, "try", { key: "busy", ttl_ms: 5_000, flags: KEEP });
    expect(held.result).toBeGreaterThan(0);
    const contended = await lock(b, "try", { key: "busy", ttl_ms: 5_000 });
    expect(contended.result).toBe(S.TRY_CONTENDED);
    expect(contended.code).toBeUndefined();
    expect(await lock(b, "acquire", { key: "busy", ttl_ms: 5_000, wait_ms: 0 })).toMatchObject({ result: -S.TIMEOUT, code: "TIMEOUT" });
    const waiting = lock(b, "acquire", { key: "busy", ttl_ms: 5_000, wait_ms: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lock(a, "release", { handle: held.result })).toEqual({ result: 0 });
    expect((await waiting).result).toBeGreaterThan(0);
  });

  it("releases the locks a call forgets when it returns, and keeps those taken with FLAG_KEEP", async () => {
    const g = await start();
    expect((await lock(g, "try", { key: "forgotten", ttl_ms: 60_000 })).result).toBeGreaterThan(0);
    expect(fx.locks.heldCount).toBe(0);
    expect((await lock(g, "try", { key: "kept", ttl_ms: 60_000, flags: KEEP })).result).toBeGreaterThan(0);
    expect(fx.locks.heldCount).toBe(1);
    const other = await start();
    expect((await lock(other, "try", { key: "forgotten", ttl_ms: 5_000 })).result).toBeGreaterThan(0);
    expect((await lock(other, "try", { key: "kept", ttl_ms: 5_000 })).result).toBe(S.TRY_CONTENDED);
  });

  it("shares read locks, excludes a writer, counts a semaphore's permits, and queues a fair mutex", async () => {
    const a = await start();
    const b = await start();
    expect((await lock(a, "try_read", { key: "rw", ttl_ms: 5_000, flags: KEEP })).result).toBeGreaterThan(0);
    expect((await lock(b, "try_read", { key: "rw", ttl_ms: 5_000, flags: KEEP })).result).toBeGreaterThan(0);
    expect((await lock(b, "try_write", { key: "rw", ttl_ms: 5_000 })).result).toBe(S.TRY_CONTENDED);
    expect(await lock(b, "status", { key: "rw", flags: S.FLAG_RW })).toMatchObject({ value: { kind: "rw", holders: [{}, {}] } });
    expect((await lock(a, "try_permit", { key: "sem", permits: 2, ttl_ms: 5_000, flags: KEEP })).result).toBeGreaterThan(0);
    expect((await lock(b, "try_permit", { key: "sem", permits: 2, ttl_ms: 5_000, flags: KEEP })).result).toBeGreaterThan(0);
    expect((await lock(b, "try_permit", { key: "sem", permits: 2, ttl_ms: 5_000 })).result).toBe(S.TRY_CONTENDED);
    expect(await lock(b, "try_permit", { key: "sem", permits: 3, ttl_ms: 5_000 })).toMatchObject({ result: -S.PERMITS_MISMATCH, code: "PERMITS_MISMATCH" });
    // The fair mutex rides try and acquire with FLAG_FAIR, as in the native ABI.
    expect((await lock(a, "try", { key: "fair", ttl_ms: 5_000, flags: S.FLAG_FAIR | KEEP })).result).toBeGreaterThan(0);
    expect((await lock(b, "try", { key: "fair", ttl_ms: 5_000, flags: S.FLAG_FAIR })).result).toBe(S.TRY_CONTENDED);
    expect(await lock(b, "status", { key: "fair", flags: S.FLAG_FAIR })).toMatchObject({ value: { kind: "fair", holders: [{}] } });
  });

  it("campaigns, proclaims, shows the leader and resigns", async () => {
    const a = await start();
    const b = await start();
    const led = await lock(a, "try_campaign", { key: "election", value: "node a", ttl_ms: 5_000, flags: KEEP });
    expect(led.result).toBeGreaterThan(0);
    expect((await lock(b, "try_campaign", { key: "election", value: "node b", ttl_ms: 5_000 })).result).toBe(S.TRY_CONTENDED);
    expect(await lock(b, "leader", { key: "election" })).toMatchObject({ value: { held: true, value: "node a", term: 1 } });
    expect(await lock(a, "proclaim", { handle: led.result, value: "node a, again" })).toEqual({ result: 0 });
    expect(await lock(b, "leader", { key: "election" })).toMatchObject({ value: { value: "node a, again" } });
    expect(await lock(a, "resign", { handle: led.result })).toEqual({ result: 0 });
    expect(await lock(b, "leader", { key: "election" })).toMatchObject({ value: { held: false } });
  });

  it("refuses bad JSON, a missing or unknown field and a bad key with INVALID_ARGUMENT, naming what is wrong", async () => {
    const g = await start();
    expect(await lock(g, "try", "{not json")).toMatchObject({ result: -S.INVALID_ARGUMENT, message: expect.stringMatching(/^lock_try: .*JSON/) });
    expect(await lock(g, "try", { key: "k" })).toMatchObject({ result: -S.INVALID_ARGUMENT, message: expect.stringMatching(/"ttl_ms".*missing/) });
    expect(await lock(g, "try", { key: "k", ttl_ms: 5, ttl: 5 })).toMatchObject({
      result: -S.INVALID_ARGUMENT,
      message: expect.stringMatching(/unknown.*"ttl"/),
    });
    expect(await lock(g, "try", { key: "", ttl_ms: 5_000 })).toMatchObject({ result: -S.INVALID_ARGUMENT, code: "INVALID_ARGUMENT" });
    expect(await lock(g, "try", { key: "k", ttl_ms: 5_000, flags: S.FLAG_GLOBAL })).toMatchObject({ result: -S.PERMISSION_DENIED });
    expect(await lock(g, "try", { key: "x".repeat(S.MAX_KEY_BYTES + 1), ttl_ms: 5_000 })).toMatchObject({ result: -S.INVALID_ARGUMENT });
    // Nothing was left held, and the plugin runs on.
    expect((await lock(g, "try", { key: "k", ttl_ms: 5_000 })).result).toBeGreaterThan(0);
  });

  it("writes through lockhost/fence with its lock's fence, and is refused once its lock is stale", async () => {
    const { url, seen } = await fencedResource();
    const g = await start({ http: grant });
    const handle = (await lock(g, "try", { key: "ledger", ttl_ms: 60_000, flags: KEEP })).result;
    expect(handle).toBeGreaterThan(0);
    const write = (body: string) => g.callString("http", [`${JSON.stringify({ method: "POST", url, fence_handle: handle })}\n${body}`]);
    expect(await write("entry 1")).toBe("200\nstored under fence 1");
    // Another holder takes over (an operator's force-release, then a host-side holder with fence 2) and writes.
    // The lock's full name, as status names it (the plugin's namespace and the key).
    const name = ((await lock(g, "status", { key: "ledger" })).value as { key: string }).key;
    expect(await fx.locks.forceRelease({ name })).toBe(1);
    const lease = (await fx.locks.try({ name }, { ttlMs: 60_000 }))!;
    const res = await fetch(url, {
      method: "POST",
      headers: { [LOCK_HEADER]: lease.name, [FENCE_HEADER]: String(lease.fence), [KIND_HEADER]: "mutex" },
      body: "entry 2",
    });
    expect(res.status).toBe(200);
    // The stale holder's write never reaches the resource with its old fence: lockhost refuses to send it.
    await expect(write("entry 3")).rejects.toMatchObject({ code: "GUEST_TRAP", message: expect.stringMatching(/LOST/) });
    // A request naming the stale fence by hand is refused by the resource itself.
    const stale = await fetch(url, { method: "POST", headers: { [LOCK_HEADER]: lease.name, [FENCE_HEADER]: "1", [KIND_HEADER]: "mutex" }, body: "entry 4" });
    expect(stale.status).toBe(409);
    expect(seen).toEqual([`${name} 1 entry 1`, `${name} 2 entry 2`, "409 stale_fence"]);
    await fx.locks.release(lease);
    // A plain request (no fence asked) goes through the grant like any plugin's; outside it, the call traps.
    await expect(g.callString("http", [JSON.stringify({ url: "http://example.invalid/" })])).rejects.toMatchObject({ code: "GUEST_TRAP" });
  });

  it("may not make HTTP requests without a [plugins.http] grant", async () => {
    const { url } = await fencedResource();
    const g = await start();
    await expect(g.callString("http", [JSON.stringify({ url })])).rejects.toMatchObject({
      code: "GUEST_TRAP",
      message: expect.stringMatching(/PERMISSION_DENIED/),
    });
  });
});

describe("Extism plugins' limits (worker runtime)", () => {
  it("stops a plugin spinning past its call time limit and releases its lock", async () => {
    const g = fx.track(await startWorkerGuest("extism-locks", fx.locks, fx.log.logger, { callTimeoutMs: 300 }));
    await expect(g.callString("hold_and_spin", [JSON.stringify({ key: "spin", ttl_ms: 60_000, flags: S.FLAG_KEEP })])).rejects.toMatchObject({
      code: "GUEST_TIMEOUT",
    });
    expect(fx.locks.heldCount).toBe(0);
    // Restarted: it takes locks again.
    expect((await lock(g, "try", { key: "spin", ttl_ms: 5_000 })).result).toBeGreaterThan(0);
  });
});

describe("docs/guests-extism.md", () => {
  it("declares the lock functions for the AssemblyScript PDK as the tested plugin does, and lists every one", async () => {
    const guide = readFileSync(new URL("../docs/guests-extism.md", import.meta.url), "utf8");
    const plugin = readFileSync(new URL("./guests/extism/locks.ts", import.meta.url), "utf8");
    const asBlock = /```ts\n(import \{ Host, Memory \} from "@extism\/as-pdk";[\s\S]*?)```/.exec(guide)![1]!;
    const declarations = asBlock.split("\n").filter((l) => l.startsWith("@external") || l.startsWith("declare function"));
    expect(declarations.length).toBeGreaterThan(0);
    for (const line of declarations) expect(plugin).toContain(line);
    const { LOCK_FUNCTIONS } = await import("../abi/extism.js");
    for (const f of LOCK_FUNCTIONS) expect(guide).toContain(`\`${f.name}\``);
  });
});
