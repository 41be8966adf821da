// The ABI is language-neutral and versioned: a guest written by hand in WebAssembly text
// takes locks, and modules that do not meet the ABI are refused with a clear message.
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { codeOfStatus } from "../kit/errors.js";
import { LockService } from "../host/locking/service.js";
import { loadGuestModule, PROVIDED_IMPORTS } from "../host/runtime/guest-module.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";

let locks: LockService;
let guest: GuestInstance | undefined;

beforeEach(() => {
  locks = new LockService(new MemoryBackend(), { node: "n" });
});
afterEach(async () => {
  await guest?.close();
  guest = undefined;
  expect(locks.heldCount).toBe(0);
  await locks.close();
});

describe.each(GUEST_RUNTIMES)("a guest in WebAssembly text (%s runtime)", (runtime) => {
  it("acquires, fences, renews, reads its owner and releases through the raw imports", async () => {
    guest = await startGuest("raw", locks, captureLogger().logger, { plugin: "wat", runtime });
    const h = (await guest.call("takeKept", [10_000])) as number;
    expect(h).toBeGreaterThan(0);
    expect((await locks.status({ name: "wat:raw" })).held).toBe(true);
    expect(await guest.call("take", [10_000])).toBe(S.TRY_CONTENDED);
    expect(await guest.call("fence", [h])).toBe(1n);
    expect(await guest.call("renew", [h, 20_000])).toBe(S.OK);
    expect(await guest.call("ownerLen", [h])).toBe(36);
    expect(await guest.call("release", [h])).toBe(S.OK);
    expect(await guest.call("release", [h])).toBe(-S.ALREADY_RELEASED);
    expect(await guest.call("lastErrorLen", [])).toBe(Buffer.byteLength(`handle ${h} was already released`));
    expect(await guest.call("fence", [h])).toBe(BigInt(-S.ALREADY_RELEASED));
  });
});

describe("modules that do not meet the ABI", () => {
  it("refuses a module without the version marker, naming plugin, file and the fix", async () => {
    const err = await loadGuestModule("old", guestWasm("noversion"), 2 ** 20).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ABI_UNSUPPORTED" });
    expect((err as Error).message).toMatch(/plugin old \(.*noversion\.wasm\) does not export lockhost_abi_version\(\)/);
  });

  it("refuses an unknown ABI version, naming it and the supported ones", async () => {
    const err = await startGuest("badversion", locks, captureLogger().logger, { plugin: "future" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ABI_UNSUPPORTED" });
    expect((err as Error).message).toMatch(/plugin future \(.*badversion\.wasm\) declares lockhost ABI version 99; this host supports version 1/);
  });

  it("refuses a module that brings its own memory instead of importing it", async () => {
    const err = await loadGuestModule("mem", guestWasm("ownmemory"), 2 ** 20).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ABI_UNSUPPORTED" });
    expect((err as Error).message).toContain("must import its memory as env.memory");
  });

  it("refuses a file that is not WebAssembly, and one that does not exist (a config error naming [[plugins]] wasm)", async () => {
    await expect(loadGuestModule("x", new URL(import.meta.url).pathname, 2 ** 20)).rejects.toMatchObject({ code: "ABI_UNSUPPORTED" });
    await expect(loadGuestModule("x", "/nonexistent/x.wasm", 2 ** 20)).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: '[[plugins]] "x": wasm = "/nonexistent/x.wasm" does not exist (a relative path is read from the config file\'s folder)',
    });
  });

  it("refuses a guest whose initial memory is above its limit", async () => {
    const err = await loadGuestModule("tiny", guestWasm("locker"), 0).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "ABI_UNSUPPORTED" });
    expect((err as Error).message).toContain("raise memory_limit_mib");
  });
});

describe("abi/status.ts and ABI.md", () => {
  it("agree on every status code", () => {
    const doc = readFileSync(new URL("../abi/ABI.md", import.meta.url), "utf8");
    const rows = [...doc.matchAll(/^\| (\d+) \| `([A-Z_]+)` \|/gm)].map((m) => [Number(m[1]), m[2]!] as const);
    expect(rows.length).toBeGreaterThanOrEqual(13);
    for (const [num, name] of rows) {
      expect((S as Record<string, number>)[name], name).toBe(num);
      if (num > 0) expect(codeOfStatus(num)).toBe(name);
    }
  });

  const doc = (): string => readFileSync(new URL("../abi/ABI.md", import.meta.url), "utf8");

  it("agree on every flag, handle state and limit", () => {
    const text = doc();
    const named = (re: RegExp): [string, number][] => [...text.matchAll(re)].map((m) => [m[1]!, Number(m[2])]);
    const flags = named(/^\| `(FLAG_[A-Z]+)` \| (\d+) \|/gm);
    const states = named(/^\| `(STATE_[A-Z]+)` \| (\d+) \|/gm);
    const limits = named(/^\| `(MAX_[A-Z_]+)` \| (\d+) \|/gm);
    const inSource = (prefix: string): string[] =>
      Object.keys(S)
        .filter((k) => k.startsWith(prefix))
        .sort();
    expect(flags.map(([n]) => n).sort()).toEqual(inSource("FLAG_"));
    expect(states.map(([n]) => n).sort()).toEqual(inSource("STATE_"));
    expect(limits.map(([n]) => n).sort()).toEqual(inSource("MAX_"));
    for (const [name, value] of [...flags, ...states, ...limits]) expect((S as Record<string, number>)[name], name).toBe(value);
  });

  it("documents exactly the lock imports the host provides", () => {
    const section = doc().split("## Imports of module `lock`")[1]!.split("### ")[0]!;
    const documented = [...section.matchAll(/^\| `([a-z_]+)` \| `\(/gm)].map((m) => m[1]!).sort();
    expect(documented).toEqual([...PROVIDED_IMPORTS.lock!].sort());
  });
});
