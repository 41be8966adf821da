// Host.reload: the config file re-read and applied without a gap, on real guests (worker
// runtime) and a real TOML file. A plugin whose module and entry are unchanged keeps its
// instances; a changed .wasm gets new ones before the old ones drain; what a running host cannot
// change is refused by key, an invalid file is refused, and either way the running config stays.
import { createHash } from "node:crypto";
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import { loadConfig, resolveConfig } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { until } from "./support/until.js";

let dir: string;
const hosts: Host[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "lockhost-reload-"));
});
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop(2_000)));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const sha256 = async (path: string): Promise<string> =>
  createHash("sha256")
    .update(await readFile(path))
    .digest("hex");

/** A config file in its own folder, with the plugin "t" running `t.wasm` there (a copy of `guest`). */
async function setup(name: string, guest = "ticker"): Promise<{ file: string; wasm: string; write: (body: string) => Promise<void> }> {
  const file = join(dir, `${name}.toml`);
  const wasm = join(dir, `${name}.wasm`);
  await copyFile(guestWasm(guest), wasm);
  return { file, wasm, write: (body) => writeFile(file, body) };
}

const HEAD = `[host]\nnode = "reload-node"\n[locking]\nbackend = "memory"\n`;
const plugin = (wasm: string, extra = ""): string => `[[plugins]]\nname = "t"\nwasm = "${wasm}"\n${extra}`;

async function start(file: string): Promise<{ host: Host; log: ReturnType<typeof captureLogger> }> {
  const log = captureLogger();
  const host = await Host.start(await loadConfig(file), { logger: log.logger });
  hosts.push(host);
  return { host, log };
}

async function refusal(p: Promise<unknown>): Promise<LockhostError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LockhostError);
  return err as LockhostError;
}

describe("Host.reload", () => {
  it("keeps the instances of a plugin whose module and entry are unchanged, and adds and removes schedules", async () => {
    const { file, wasm, write } = await setup("keep");
    await write(HEAD + plugin(wasm));
    const { host } = await start(file);
    host.scheduler.start();
    const before = host.guest("t");
    await host.call("t", "other");
    expect(await host.call("t", "calls")).toBe(1);

    await write(`${HEAD}${plugin(wasm)}[[scheduled]]\nplugin = "t"\nexport = "other"\nschedule = "1h"\n`);
    const added = await host.reload();
    expect(added.plugins).toEqual({ added: [], replaced: [], kept: ["t"], removed: [] });
    expect(added.schedules).toEqual({ added: ["t.other"], changed: [], removed: [] });
    expect(host.schedules.map((s) => s.id)).toEqual(["t.other"]);
    expect(host.scheduler.ticks()["t.other"]).toBeDefined();
    // The same instance, with its memory: its call count goes on.
    expect(host.guest("t")).toBe(before);
    expect(await host.call("t", "calls")).toBe(1);

    await write(`${HEAD}${plugin(wasm)}[[scheduled]]\nplugin = "t"\nexport = "other"\nschedule = "2h"\n`);
    expect((await host.reload()).schedules).toEqual({ added: [], changed: ["t.other"], removed: [] });
    await write(HEAD + plugin(wasm));
    expect((await host.reload()).schedules).toEqual({ added: [], changed: [], removed: ["t.other"] });
    expect(host.guest("t")).toBe(before);
    expect(host.config.scheduled).toEqual([]);
  });

  it("starts new instances of a plugin whose .wasm changed before the old ones drain: a call in flight finishes on the old one", async () => {
    const { file, wasm, write } = await setup("swap", "lifecycle");
    await write(HEAD + plugin(wasm, "call_timeout_ms = 30000\n"));
    const { host, log } = await start(file);
    const before = host.guest("t");
    const inFlight = host.call("t", "job", [1_500]);
    await until("the job started", 10_000, () => log.messages().some((m) => m.startsWith("guest: job start")));

    await copyFile(guestWasm("ticker"), wasm);
    const report = await host.reload();
    expect(report.plugins).toEqual({ added: [], replaced: ["t"], kept: [], removed: [] });
    const after = host.guest("t");
    expect(after).not.toBe(before);
    // The new module's exports, checked before it took the plugin's calls.
    expect(after.hasExport("other")).toBe(true);
    expect(after.hasExport("job")).toBe(false);
    expect(await host.call("t", "calls")).toBe(0);
    // The old instance finishes the call it was running, and only then closes.
    await expect(inFlight).resolves.toBeTypeOf("number");
    await until("the old instances closed", 10_000, () =>
      log.messages().includes("reload: the old instances of plugin t finished their calls and were closed"),
    );
    await expect(before.call("job", [1])).rejects.toMatchObject({ code: "CLOSED" });
    const lines = log.lines.filter((l) => l.msg.startsWith("reload: applied"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ plugins: { replaced: ["t"] } });
  });

  it("adds and removes plugins; a removed plugin's instances are closed", async () => {
    const { file, wasm, write } = await setup("plugins");
    const other = join(dir, "plugins-l.wasm");
    await copyFile(guestWasm("lifecycle"), other);
    await write(HEAD + plugin(wasm));
    const { host, log } = await start(file);
    const t = host.guest("t");
    await write(`${HEAD}[[plugins]]\nname = "l"\nwasm = "${other}"\n`);
    const report = await host.reload();
    expect(report.plugins).toEqual({ added: ["l"], replaced: [], kept: [], removed: ["t"] });
    expect(() => host.guest("t")).toThrow(/no plugin named "t"/);
    expect(await host.call("l", "add", [2, 3])).toBe(5);
    await until("t closed", 10_000, () => log.messages().includes("reload: the old instances of plugin t finished their calls and were closed"));
    await expect(t.call("calls")).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("refuses what a running host cannot change, naming each key, and keeps the running config", async () => {
    const { file, wasm, write } = await setup("refused");
    await write(HEAD + plugin(wasm));
    const { host, log } = await start(file);
    const running = host.config;
    const guest = host.guest("t");
    await write(
      `[host]\nnode = "another"\nlog_level = "debug"\n[locking]\nbackend = "memory"\n[locking.keepalive]\nmax_retries = 7\n` +
        `[admin]\nlisten = "127.0.0.1:0"\n${plugin(wasm)}[[scheduled]]\nplugin = "t"\nexport = "other"\nschedule = "1s"\n`,
    );
    const e = await refusal(host.reload());
    expect(e.code).toBe("NOT_RELOADABLE");
    expect(e.message).toContain(`${file}: reload refused, nothing changed`);
    for (const key of ["[host] node", "[host] log_level", "[locking.keepalive] max_retries", "[admin]"]) expect(e.message).toContain(key);
    expect(e.message).toContain("Rolling restart");
    expect(host.config).toBe(running);
    expect(host.guest("t")).toBe(guest);
    expect(host.schedules).toEqual([]);
    const line = log.lines.find((l) => l.msg.startsWith("reload refused; the running config is kept: NOT_RELOADABLE"));
    expect(line).toMatchObject({ level: 50, code: "NOT_RELOADABLE" });

    await write(`[host]\nnode = "reload-node"\n[locking]\nbackend = "redis"\n${plugin(wasm)}`);
    expect((await refusal(host.reload())).message).toContain("[locking] backend");
    expect(host.config).toBe(running);
  });

  it("keeps the running config when the file is invalid, or a plugin does not load, and says why", async () => {
    const { file, wasm, write } = await setup("invalid");
    await write(HEAD + plugin(wasm));
    const { host, log } = await start(file);
    const running = host.config;
    await write(`${HEAD}${plugin(wasm)}[[scheduled]]\nplugin = "t"\nexport = "other"\nschedule = "soon"\n`);
    const e = await refusal(host.reload());
    expect(e.code).toBe("CONFIG_INVALID");
    expect(e.message).toContain("schedule");
    await write(`${HEAD}${plugin(wasm)}[[scheduled]]\nplugin = "t"\nexport = "nope"\nschedule = "1s"\n`);
    expect((await refusal(host.reload())).message).toMatch(/plugin t has no export "nope"/);
    await write(`${HEAD}${plugin(wasm)}[[plugins]]\nname = "x"\nwasm = "${join(dir, "missing.wasm")}"\n`);
    expect((await refusal(host.reload())).message).toMatch(/"x": wasm = .* does not exist/);
    await write(`${HEAD}${plugin(wasm)}[[plugins]]\nname = "x"\nwasm = "${guestWasm("noversion")}"\n`);
    expect((await refusal(host.reload())).code).toBe("ABI_UNSUPPORTED");
    expect(host.config).toBe(running);
    expect(await host.call("t", "calls")).toBe(0);
    expect(log.lines.filter((l) => l.msg.startsWith("reload refused; the running config is kept")).length).toBe(4);
    // A good file afterwards reloads as ever.
    await write(HEAD + plugin(wasm, "instances = 2\n"));
    expect((await host.reload()).plugins.replaced).toEqual(["t"]);
  });

  it("sha256 pins the module: a mismatch refuses the start naming the plugin, and refuses a reload, keeping the running module", async () => {
    const { file, wasm, write } = await setup("pin");
    const hash = await sha256(wasm);
    await write(HEAD + plugin(wasm, `sha256 = "${"0".repeat(64)}"\n`));
    const atStart = await refusal(start(file));
    expect(atStart.code).toBe("CONFIG_INVALID");
    expect(atStart.message).toContain(`${file}: [[plugins]] "t": sha256 pins the module to ${"0".repeat(64)}, but wasm = "${wasm}" has sha256 ${hash}`);

    await write(HEAD + plugin(wasm, `sha256 = "${hash.toUpperCase()}"\n`));
    const { host } = await start(file);
    const guest = host.guest("t");
    await copyFile(guestWasm("ticker-b"), wasm);
    const e = await refusal(host.reload());
    expect(e.code).toBe("CONFIG_INVALID");
    expect(e.message).toContain(`sha256 pins the module to ${hash}, but wasm = "${wasm}" has sha256 ${await sha256(wasm)}`);
    expect(host.guest("t")).toBe(guest);
    // Pinned to the new bytes, it loads.
    await write(HEAD + plugin(wasm, `sha256 = "${await sha256(wasm)}"\n`));
    expect((await host.reload()).plugins.replaced).toEqual(["t"]);

    await write(HEAD + plugin(wasm, `sha256 = "abc"\n`));
    expect((await refusal(host.reload())).message).toContain("sha256 must be 64 hex digits");
  });

  it("runs reloads one at a time: a second waits for the first, then reads the file afresh", async () => {
    const { file, wasm, write } = await setup("serial");
    await write(HEAD + plugin(wasm));
    const { host, log } = await start(file);
    await copyFile(guestWasm("ticker-b"), wasm);
    const first = host.reload();
    const second = host.reload();
    const [a, b] = await Promise.all([first, second]);
    expect(a.plugins.replaced).toEqual(["t"]);
    // The second found the module the first loaded: nothing left to change.
    expect(b.plugins).toEqual({ added: [], replaced: [], kept: ["t"], removed: [] });
    expect(log.messages().filter((m) => m.startsWith("reload: applied"))).toHaveLength(2);
  });

  it("refuses a reload once the host is stopping, and one of a config built in code without a new config", async () => {
    const { file, wasm, write } = await setup("stopping");
    await write(HEAD + plugin(wasm));
    const { host } = await start(file);
    const stopped = host.stop();
    expect((await refusal(host.reload())).code).toBe("CLOSED");
    await stopped;

    const inCode = await Host.start(resolveConfig({ plugins: [{ name: "t", wasm }] }), { logger: captureLogger().logger });
    hosts.push(inCode);
    const e = await refusal(inCode.reload());
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toContain("host.reload(config)");
    // Given one, it applies it.
    expect((await inCode.reload(resolveConfig({ plugins: [{ name: "t", wasm, instances: 2 }] }))).plugins.replaced).toEqual(["t"]);
  });
});
