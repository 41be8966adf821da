// The Extism kernel against the real thing: one .wasm built with @extism/as-pdk
// (test/guests/extism/kernel.ts) runs under @extism/extism and under lockhost, in every runtime
// this Node has, with the same inputs, config and vars, and must give the same outputs, logs,
// errors and traps, call after call (vars live across calls, and across a trap). Then what only
// lockhost adds: the memory cap covering the kernel's blocks, the loader's checks.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import createPlugin, { type Plugin } from "@extism/extism";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import type { LockhostError } from "../kit/errors.js";
import { loadGuestModule } from "../host/runtime/guest-module.js";
import type { HttpGrant } from "../host/runtime/capabilities/http/index.js";
import { extismLockFunctions } from "../host/runtime/extism/index.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";
import { guestWasm } from "./support/guests.js";

const fx = guestFixture();
const WASM = "extism-kernel";
const CONFIG = { greeting: "hello from the config", accent: "héllo" };

/** What one call gave: its output, or its error (the plugin's own), or that it trapped. */
type Outcome = { output: string } | { error: string } | { trap: true };

/**
 * The calls, in order, on one plugin instance: every kernel import the plugin uses, the
 * output forms (bytes, none, a return code without an error), the Extism error, a trap (a
 * non-ASCII config value overflows as-pdk's outputString block, in both hosts), and vars
 * that must survive all of it.
 */
const CALLS: readonly (readonly [string, string])[] = [
  ["echo", "héllo wörld ✓ 1234567890"],
  ["echo", ""],
  ["checksum", "abcdefghijk"],
  ["checksum", "x".repeat(100_003)],
  ["config", "greeting"],
  ["config", "missing"],
  ["counter", ""],
  ["counter", ""],
  ["logs", "one"],
  ["blocks", ""],
  ["quiet", ""],
  ["code", ""],
  ["fail", "it went wrong: ✗"],
  ["counter", ""],
  ["boom", ""],
  ["counter", ""],
  ["config", "accent"],
  ["counter", "reset"],
  ["counter", ""],
];

let reference: { outcomes: Outcome[]; logs: string[] };

beforeAll(async () => {
  const logs: string[] = [];
  const logger = Object.fromEntries(["trace", "debug", "info", "warn", "error"].map((level) => [level, (m: string) => logs.push(`${level}: ${m}`)]));
  const plugin: Plugin = await createPlugin(
    { wasm: [{ data: readFileSync(guestWasm(WASM)) }] },
    { logger: logger as unknown as Console, config: CONFIG, useWasi: false },
  );
  const outcomes: Outcome[] = [];
  for (const [name, input] of CALLS) {
    try {
      const out = await plugin.call(name, input);
      outcomes.push({ output: out?.text() ?? "" });
    } catch (err) {
      const message = (err as Error).message;
      const plugged = /^Plugin-originated error: ([\s\S]*)$/.exec(message);
      outcomes.push(plugged ? { error: plugged[1]! } : { trap: true });
    }
  }
  await plugin.close();
  reference = { outcomes, logs };
});

/**
 * The lock plugin's calls compared the same way: HTTP through the kernel (@extism/extism's own
 * http_request, lockhost's through the plugin's grant) and the lock functions (lockhost/extism's
 * under @extism/extism, lockhost's own kernel under lockhost): the same replies, byte for byte.
 */
async function lockCalls(call: (name: string, input: string) => Promise<string>): Promise<string[]> {
  const out: string[] = [];
  const ask = async (name: string, args: unknown): Promise<string> => {
    const reply = await call(name, typeof args === "string" ? args : JSON.stringify(args));
    out.push(reply);
    return reply;
  };
  const handle = (JSON.parse(await ask("call_try", { key: "k", ttl_ms: 60_000, flags: 2 })) as { result: number }).result;
  await ask("call_fence", { handle });
  await ask("call_state", { handle });
  await ask("call_renew", { handle, ttl_ms: 0 });
  await ask("call_release", { handle });
  await ask("call_release", { handle });
  await ask("call_state", { handle });
  await ask("call_try", "not json");
  await ask("call_try", { key: "k" });
  await ask("call_fence", { handle: 77 });
  return out;
}
let server: Server;
let lockReference: string[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      res.writeHead(req.method === "POST" ? 201 : 200);
      res.end(`${req.method} ${req.url} ${body}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const service = new LockService(new MemoryBackend(), { node: "reference" });
  const locks = extismLockFunctions(service, { plugin: "test" });
  const plugin = await createPlugin(
    { wasm: [{ data: readFileSync(guestWasm("extism-locks")) }] },
    { runInWorker: true, functions: locks.functions, allowedHosts: ["127.0.0.1"], logger: console },
  );
  const call = async (name: string, input: string) => (await locks.call(() => plugin.call(name, input)))?.text() ?? "";
  lockReference = [];
  for (const [name, input] of httpCalls()) lockReference.push(await call(name, input));
  lockReference.push(...(await lockCalls(call)));
  await plugin.close();
  await locks.close();
  await service.close();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function httpCalls(): [string, string][] {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return [
    ["http", JSON.stringify({ method: "GET", url: `${url}/get?x=1` })],
    ["http", `${JSON.stringify({ method: "POST", url: `${url}/post`, headers: { "content-type": "text/plain" } })}\nthe body`],
  ];
}

const grant = {
  allowedHosts: ["127.0.0.1:*"],
  methods: ["GET", "POST"],
  timeoutMs: 2_000,
  maxRequestBytes: 1 << 16,
  maxResponseBytes: 1 << 16,
  headers: {},
  allowPrivateRanges: ["127.0.0.0/8"],
  maxRedirects: 0,
} as HttpGrant;

describe.each(GUEST_RUNTIMES)("the Extism kernel, as @extism/extism runs it (%s runtime)", (runtime: Runtime) => {
  it("gives the same outputs, errors, traps and logs for the same calls", async () => {
    const guest = fx.track(await startGuest(WASM, fx.locks, fx.log.logger, { runtime, config: CONFIG }));
    const outcomes: Outcome[] = [];
    for (const [name, input] of CALLS) {
      try {
        outcomes.push({ output: await guest.callString(name, [input]) });
      } catch (err) {
        const e = err as LockhostError;
        if (e.code === "CALL_FAILED") outcomes.push({ error: e.message.replace(/^plugin test export \w+ failed: /, "") });
        else if (e.code === "GUEST_TRAP") outcomes.push({ trap: true });
        else throw err;
      }
    }
    expect(outcomes).toEqual(reference.outcomes);
    // Sanity: the reference did what the cases are about.
    expect(reference.outcomes[0]).toEqual({ output: "héllo wörld ✓ 1234567890" });
    expect(reference.outcomes.filter((o) => "trap" in o)).toHaveLength(2);
    expect(reference.outcomes.at(-1)).toEqual({ output: "1" });
    const logs = fx.log.lines
      .filter((l) => l.msg.startsWith("guest: "))
      .map((l) => `${({ 20: "debug", 30: "info", 40: "warn", 50: "error" } as Record<number, string>)[l.level as number]}: ${l.msg.slice(7)}`);
    expect(logs).toEqual(reference.logs);
    expect(logs).toHaveLength(4);
  });

  it("gives the same HTTP responses and lock replies as @extism/extism with lockhost/extism", async () => {
    const guest = fx.track(await startGuest("extism-locks", fx.locks, fx.log.logger, { runtime, http: grant }));
    const call = (name: string, input: string) => guest.callString(name, [input]);
    const got: string[] = [];
    for (const [name, input] of httpCalls()) got.push(await call(name, input));
    got.push(...(await lockCalls(call)));
    expect(got).toEqual(lockReference);
    expect(got[0]).toMatch(/^200\nGET \/get\?x=1 $/);
    expect(got[1]).toBe("201\nPOST /post the body");
    expect(JSON.parse(got[3]!)).toEqual({ result: 1 });
    expect(JSON.parse(got[7]!)).toMatchObject({ code: "ALREADY_RELEASED" });
  });

  it("returns an export's return code from call(), and its error as CALL_FAILED", async () => {
    const guest = fx.track(await startGuest(WASM, fx.locks, fx.log.logger, { runtime }));
    expect(await guest.call("code")).toBe(3);
    expect(await guest.call("echo", ["x"])).toBe(0);
    await expect(guest.call("fail", ["nope"])).rejects.toMatchObject({ code: "CALL_FAILED", message: "plugin test export fail failed: nope" });
    await expect(guest.call("echo", [1])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(guest.call("echo", ["a", "b"])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("counts the kernel's blocks against the memory cap", async () => {
    const guest = fx.track(await startGuest(WASM, fx.locks, fx.log.logger, { runtime, memoryLimitMib: 1 }));
    // The input alone (its kernel block) is near the cap; the plugin's copy of it in its own memory goes past it.
    await expect(guest.callString("echo", ["y".repeat(900_000)])).rejects.toMatchObject({ code: "GUEST_TRAP" });
    expect(fx.log.messages().join("\n")).toMatch(/memory/);
    // The instance was replaced: the next call runs.
    expect(await guest.callString("echo", ["small"])).toBe("small");
  });
});

describe("loading an Extism plugin", () => {
  it("is told by its imports, its memory made an import with the plugin's cap", async () => {
    const mod = await loadGuestModule("p", guestWasm(WASM), 4 * 2 ** 20);
    expect(mod.abi).toBe("extism");
    expect(mod.memory.maximum).toBe(64);
    expect([...mod.exports.keys()].sort()).toEqual(["blocks", "boom", "checksum", "code", "config", "counter", "echo", "fail", "logs", "quiet"]);
    expect(WebAssembly.Module.imports(mod.module)).toContainEqual({ module: "env", name: "memory", kind: "memory" });
  });

  it("refuses abi = lockhost for it, and a lockhost guest as extism", async () => {
    await expect(loadGuestModule("p", guestWasm(WASM), 4 * 2 ** 20, { abi: "lockhost" })).rejects.toMatchObject({ code: "ABI_UNSUPPORTED" });
    await expect(loadGuestModule("p", guestWasm("locker"), 4 * 2 ** 20, { abi: "extism" })).rejects.toMatchObject({
      code: "ABI_UNSUPPORTED",
      message: expect.stringMatching(/lockhost does not provide to an Extism plugin/),
    });
  });
});
