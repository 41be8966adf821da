// What a guest can do under its lock, in every runtime this Node has, against a real HTTP
// server the test starts: host functions the embedder registers (bytes in and out, async, a
// context with the caller's locks and fences, thrown errors as codes, replies too long for the
// guest's buffer, a signal at shutdown), fenced HTTP within the operator's grant, config values,
// log levels and the capability query; and each one's bad input.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import { fenceGuard, fenceOf, type FenceGuardOptions } from "../fence/index.js";
import * as S from "../abi/status.js";
import { LockhostError } from "../kit/errors.js";
import type { HostFunctionContext, HostFunctions } from "../host/runtime/capabilities/functions.js";
import type { HttpGrant } from "../host/runtime/capabilities/http/index.js";
import type { GuestInstance, GuestValue } from "../host/runtime/guest-instance.js";
import { GUEST_RUNTIMES, startGuest, startWorkerGuest, type TestGuestOptions } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";
import { until } from "./support/until.js";
import { guestTraces } from "./support/log.js";
import { closeServer, listenLocal } from "./support/http-server.js";

const fx = guestFixture();
let runtime: Runtime;

/** What the test server saw: method, path, headers and body of each request. */
const seen: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url === "/big") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(Buffer.alloc(200_000, 7));
        return;
      }
      if (req.url === "/slow") return; // never answers
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "text/plain", "x-test": "yes" });
      res.end(`${req.method} ${req.url} ${body}`);
    });
  });
  base = await listenLocal(server);
});
afterAll(async () => {
  await closeServer(server);
});

/** The grant the http cases run with: the test server, reachable although it is loopback. */
const grant = (over: Partial<HttpGrant> = {}): HttpGrant => ({
  allowedHosts: ["127.0.0.1:*"],
  methods: ["GET", "POST"],
  timeoutMs: 2_000,
  maxRequestBytes: 1 << 20,
  maxResponseBytes: 100_000,
  headers: { "x-api-key": "s3cret-value" },
  allowPrivateRanges: ["127.0.0.0/8"],
  maxRedirects: 2,
  ...over,
});

/** Servers behind a fenceGuard the fence cases start; closed after all. */
const fencedServers: Server[] = [];
afterAll(async () => {
  await Promise.all(fencedServers.map(closeServer));
});

/**
 * A real node:http server behind lockhost/fence's guard made of `options`: `seen` has "status
 * lock fence" of each accepted request, "status error lock" or "status error" of each refused
 * one; `names` the lock name each request carried, read from the wire as docs/lock-model.md
 * says (the percent-encoded header when sent, else the plain one's UTF-8 bytes).
 */
async function fencedServer(options: FenceGuardOptions): Promise<{ url: string; seen: string[]; names: string[] }> {
  const seen: string[] = [];
  const names: string[] = [];
  const guard = fenceGuard({ ...options, onRefused: (r) => seen.push(`${r.status} ${r.error}${"lock" in r ? ` ${r.lock}` : ""}`) });
  const s = createServer((req, res) => {
    const encoded = req.headers["lockhost-lock-encoded"];
    const plain = req.headers["lockhost-lock"];
    names.push(typeof encoded === "string" ? decodeURIComponent(encoded) : Buffer.from(String(plain), "latin1").toString("utf8"));
    guard(req, res, () => {
      const f = fenceOf(req)!;
      seen.push(`200 ${f.lock} ${f.fence}`);
      res.end("ok");
    });
  });
  fencedServers.push(s);
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/entries`, seen, names };
}

const contexts: HostFunctionContext[] = [];
/** The signals billing.wait was called with, and its contexts (read again later). */
const signals: AbortSignal[] = [];
const waiting: HostFunctionContext[] = [];
const functions: HostFunctions = {
  billing: {
    echo: (input) => (input.byteLength > 0 && input[0] === 0x21 ? Promise.reject(new Error("no bangs")) : Promise.resolve(input)),
    wait: (_input, ctx) =>
      new Promise((_, reject) => {
        waiting.push(ctx);
        signals.push(ctx.signal);
        ctx.signal.addEventListener("abort", () => reject(new Error("stopped")));
      }),
    charge: async (input, ctx) => {
      contexts.push(ctx);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const fence = ctx.locks.find((l) => l.name === "global:ledger")?.fence;
      if (Number(new TextDecoder().decode(input)) < 0) throw new LockhostError("INVALID_ARGUMENT", "amount must not be negative");
      return `charged ${new TextDecoder().decode(input)} under fence ${fence}`;
    },
  },
};

async function guest(options: TestGuestOptions = {}): Promise<GuestInstance> {
  return fx.track(
    await startGuest("caps", fx.locks, fx.log.logger, {
      runtime,
      plugin: "billing",
      globalKeys: ["ledger", "é€"],
      functions: ["billing"],
      hostFunctions: functions,
      http: grant(),
      config: { ledger_url: "http://ledger.local", token: "t0ps3cret" },
      ...options,
    }),
  );
}
const traces = (): string[] => guestTraces(fx.log);

describe.each(GUEST_RUNTIMES)("%s runtime", (r) => {
  beforeEach(() => {
    runtime = r;
    seen.length = 0;
    contexts.length = 0;
    signals.length = 0;
  });

  describe("host functions", () => {
    it("passes bytes in and out, also a reply longer than the guest's buffer (read back, not called again)", async () => {
      const g = await guest();
      expect(await g.call("echo", ["hello", 64])).toBe(5);
      expect(traces()).toContain("echo hello");
      // 5 bytes into a 2-byte buffer: the kept reply is read with last_reply.
      expect(await g.call("echo", ["héllo", 2])).toBe(6);
      expect(traces()).toContain("echo héllo");
      // Larger than the worker's channel: it travels beside it.
      const long = "x".repeat(150_000);
      expect(await g.call("echo", [long, 16])).toBe(150_000);
      expect(traces().at(-1)).toBe(`echo ${"x".repeat(20)}…(150000)`);
    });

    it("gives the function the caller's locks and fences, and lets it be async", async () => {
      const g = await guest();
      expect(await g.call("charge", ["ledger", 42])).toBeGreaterThan(0);
      const ctx = contexts[0]!;
      expect(ctx).toMatchObject({ plugin: "billing", node: "node-a", function: "billing.charge" });
      expect(ctx.locks).toEqual([{ handle: expect.any(Number), name: "global:ledger", kind: "mutex", fence: 1 }]);
      expect(ctx.signal.aborted).toBe(false);
      expect(traces()).toContain("charge charged 42 under fence 1 fence 1");
    });

    it("turns a thrown error into its code and last_error; the guest runs on", async () => {
      const g = await guest();
      expect(await g.call("echo", ["!boom", 64])).toBe(-S.CALL_FAILED);
      expect(traces().at(-1)).toBe("echo failed: CALL_FAILED (15): host function billing.echo failed: Error: no bangs");
      expect(await g.call("charge", ["ledger", -1])).toBe(-S.INVALID_ARGUMENT);
      expect(traces().at(-1)).toBe("charge failed: INVALID_ARGUMENT (7): amount must not be negative");
      expect(await g.call("echo", ["ok", 64])).toBe(2);
    });

    it("ends a function's wait at shutdown: its signal aborts and the guest gets CANCELLED", async () => {
      const g = await guest();
      const call = g.call("waitForHost");
      // Awaited below; a failure while waiting for the function must not be left unhandled.
      call.catch(() => undefined);
      await until("billing.wait is called", 5_000, () => signals.length === 1);
      g.cancelWaits("the host is shutting down");
      expect(await call).toBe(-S.CANCELLED);
      expect(signals[0]!.aborted).toBe(true);
      expect(traces().at(-1)).toContain("wait ended: -13 host function billing.wait was not waited for: the wait was cancelled: the host is shutting down");
    });

    it("refuses a pointer outside the guest's memory before the function runs", async () => {
      const g = await guest();
      expect(await g.call("echoBadPointer")).toBe(-S.INVALID_MEMORY);
      expect(traces().at(-1)).toContain("bad pointer: input (ptr 2147418112, len 10) lies outside guest memory");
    });

    it("refuses to load a guest importing a namespace its plugin is not granted, naming plugin, module and name", async () => {
      await expect(guest({ functions: [] })).rejects.toMatchObject({
        code: "ABI_UNSUPPORTED",
        message: expect.stringMatching(
          new RegExp(
            "plugin billing .* imports function billing\\.echo, which lockhost does not provide: " +
              'module "billing" is no ABI module, and its \\[\\[plugins\\]\\] entry grants no functions',
          ),
        ),
      });
      await expect(guest({ hostFunctions: { billing: { echo: functions.billing!.echo! } } })).rejects.toMatchObject({
        code: "ABI_UNSUPPORTED",
        message: expect.stringMatching(/imports function billing\.(wait|charge), which the embedder did not register \(namespace "billing" has: echo\)/),
      });
    });
  });

  describe("http", () => {
    it("sends a GET and a POST with the grant's headers and returns status, headers and body", async () => {
      const g = await guest();
      expect(await g.call("get", [`${base}/hello`])).toBe(200);
      expect(traces().at(-1)).toBe("status 200 text/plain GET /hello ");
      expect(await g.call("post", [`${base}/entries`, '{"amount":1}', "Content-Type: application/json", ""])).toBe(201);
      expect(seen.at(-1)).toMatchObject({ method: "POST", url: "/entries", body: '{"amount":1}' });
      expect(seen.at(-1)!.headers).toMatchObject({ "content-type": "application/json", "x-api-key": "s3cret-value" });
      expect(seen.at(-1)!.headers["lockhost-fence"]).toBeUndefined();
    });

    it("carries a held lock's name and fence to the resource", async () => {
      const g = await guest();
      expect(await g.call("post", [`${base}/entries`, "x", "", "ledger"])).toBe(201);
      expect(seen.at(-1)!.headers).toMatchObject({ "lockhost-lock": "global:ledger", "lockhost-fence": "1" });
      expect(await g.call("post", [`${base}/entries`, "y", "", "ledger"])).toBe(201);
      expect(seen.at(-1)!.headers).toMatchObject({ "lockhost-lock": "global:ledger", "lockhost-fence": "2" });
    });

    it("sends a lock name of any characters as its UTF-8 bytes, with the lock's kind", async () => {
      const g = await guest();
      expect(await g.call("post", [`${base}/entries`, "x", "", "é€"])).toBe(201);
      const headers = seen.at(-1)!.headers;
      expect(Buffer.from(String(headers["lockhost-lock"]), "latin1").toString("utf8")).toBe("global:é€");
      expect(headers["lockhost-kind"]).toBe("mutex");
    });

    it("keeps `ledger` and `ledger ` two locks at a fenceGuard: the holder of `ledger ` is refused, not taken for `ledger`", async () => {
      const guarded = await fencedServer({ locks: ["global:ledger"] });
      const g = await guest({ globalKeys: ["ledger", "ledger "] });
      // Three fenced writes under `ledger ` (fences 1..3): before, the header lost its trailing
      // space, the guard took them for `global:ledger` and then refused its real holder's fence 1.
      const statuses: GuestValue[] = [];
      for (const key of ["ledger ", "ledger ", "ledger ", "ledger", "ledger"]) statuses.push(await g.call("post", [guarded.url, "x", "", key]));
      expect({ statuses, seen: guarded.seen }).toEqual({
        statuses: [403, 403, 403, 200, 200],
        seen: [
          "403 lock_not_accepted global:ledger ",
          "403 lock_not_accepted global:ledger ",
          "403 lock_not_accepted global:ledger ",
          "200 global:ledger 1",
          "200 global:ledger 2",
        ],
      });
    });

    it("sends a lock name with CR, LF or edge spaces as it is, percent-encoded; the guard reads it back", async () => {
      const guarded = await fencedServer({});
      const names = [" lead", "a\r\nb", "é\tx ", "100% "];
      const g = await guest({ globalKeys: names });
      const statuses: GuestValue[] = [];
      for (const name of names) statuses.push(await g.call("post", [guarded.url, "x", "", name]));
      // Every name arrives whole (before: edge spaces cut, and CR, LF or a tab a CALL_FAILED:
      // the header could not be sent); the guard's own rule then refuses control characters.
      expect({ statuses, names: guarded.names, seen: guarded.seen }).toEqual({
        statuses: [200, 400, 400, 200],
        names: names.map((n) => `global:${n}`),
        seen: ["200 global: lead 1", "400 bad_fence", "400 bad_fence", "200 global:100%  1"],
      });
    });

    it("starts no request and no host function call once the host is shutting down", async () => {
      const g = await guest();
      g.cancelWaits("the host is shutting down");
      expect(await g.call("get", [`${base}/x`])).toBe(-S.CANCELLED);
      expect(await g.call("echo", ["hi", 64])).toBe(-S.CANCELLED);
      expect(seen).toHaveLength(0);
    });

    it("refuses a host not allowed, naming the host and the allow-list, before any connection", async () => {
      const g = await guest({ http: grant({ allowedHosts: ["api.example.com"] }) });
      expect(await g.call("get", [`${base}/x`])).toBe(-S.PERMISSION_DENIED);
      expect(traces().at(-1)).toContain(`plugin billing may not reach "${new URL(base).host}"`);
      expect(traces().at(-1)).toContain("api.example.com");
      expect(seen).toHaveLength(0);
    });

    it("refuses an allowed name that resolves to loopback unless its range is allowed", async () => {
      const g = await guest({ http: grant({ allowedHosts: ["localhost"], allowPrivateRanges: [] }) });
      expect(await g.call("get", [`${base.replace("127.0.0.1", "localhost")}/x`])).toBe(-S.PERMISSION_DENIED);
      expect(seen).toHaveLength(0);
    });

    it("cuts off a response over max_response_bytes with TOO_LARGE, and bounds a slow one by timeout_ms", async () => {
      const g = await guest({ http: grant({ timeoutMs: 300 }) });
      expect(await g.call("get", [`${base}/big`])).toBe(-S.TOO_LARGE);
      expect(traces().at(-1)).toContain("max_response_bytes");
      expect(await g.call("get", [`${base}/slow`])).toBe(-S.TIMEOUT);
      expect(traces().at(-1)).toContain("timeout_ms");
    });

    it("carries bodies and responses larger than the worker's channel both ways", async () => {
      const g = await guest({ http: grant({ maxResponseBytes: 1 << 20 }) });
      expect(await g.call("post", [`${base}/entries`, "y".repeat(150_000), "", ""])).toBe(201);
      expect(seen.at(-1)!.body).toHaveLength(150_000);
      expect(await g.call("get", [`${base}/big`])).toBe(200);
      expect(traces().at(-1)).toBe("status 200 application/octet-stream (200000 bytes)");
    });

    it("refuses a plugin without [plugins.http], and says so through capability()", async () => {
      const g = await guest({ http: undefined });
      expect(await g.call("hasCapability", ["http"])).toBe(0);
      expect(await g.call("get", [`${base}/x`])).toBe(-S.PERMISSION_DENIED);
      expect(traces().at(-1)).toContain("has no [plugins.http] table");
      const granted = await guest();
      expect(await granted.call("hasCapability", ["http"])).toBe(1);
      expect(await granted.call("hasCapability", ["billing"])).toBe(1);
      expect(await granted.call("hasCapability", ["config"])).toBe(1);
      expect(await granted.call("hasCapability", ["ftp"])).toBe(0);
    });

    it("gives each bad request its code: a forged fence header, a bad head, invalid UTF-8, a handle not given", async () => {
      const g = await guest();
      expect(await g.call("rawRequest", [`GET ${base}/x\nlockhost-fence: 99`, 0, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(await g.call("rawRequest", [`GET ${base}/x\nLockhost-Kind: rw`, 0, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(await g.call("rawRequest", [`GET ${base}/x\nlockhost-lock-encoded: global:ledger`, 0, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(await g.call("rawRequest", ["GET", 0, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(traces().at(-1)).toContain('request line 1 must be "METHOD URL"');
      expect(await g.call("rawRequest", [`GET ${base}/x`, 3, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(traces().at(-1)).toContain("without FLAG_FENCE");
      expect(await g.call("rawRequest", [`GET ${base}/x`, 0, 64])).toBe(-S.INVALID_ARGUMENT);
      expect(await g.call("badUtf8Request")).toBe(-S.INVALID_ARGUMENT);
      expect(traces().at(-1)).toContain("request is not valid UTF-8");
      expect(await g.call("fencedBadHandle", [`${base}/x`])).toBe(-S.INVALID_HANDLE);
      expect(await g.call("rawRequest", [`DELETE ${base}/x`, 0, 0])).toBe(-S.PERMISSION_DENIED);
      expect(seen).toHaveLength(0);
    });
  });

  describe("config and log", () => {
    it("reads config values, and a missing key is a value to test", async () => {
      const g = await guest();
      expect(await g.call("configOf", ["ledger_url"])).toBe("http://ledger.local".length);
      expect(await g.call("configOf", ["nope"])).toBe(-1);
      expect(traces()).toEqual(["config ledger_url = http://ledger.local", "config nope = null"]);
    });

    it("logs at each level through the host's logger, tagged with the plugin, and drops lines below log_level", async () => {
      const g = await guest();
      await g.call("logAll");
      const lines = fx.log.lines.filter((l) => String(l.msg).startsWith("guest: "));
      expect(lines.map((l) => [l.level, l.msg, l.plugin])).toEqual([
        [20, "guest: a debug line", "billing"],
        [30, "guest: an info line", "billing"],
        [40, "guest: a warn line", "billing"],
        [50, "guest: an error line", "billing"],
        [30, "guest: a trace line", "billing"],
      ]);
      const quiet = await guest({ logLevel: "warn", plugin: "quiet" });
      await quiet.call("logAll");
      expect(fx.log.lines.filter((l) => l.plugin === "quiet" && String(l.msg).startsWith("guest: ")).map((l) => l.msg)).toEqual([
        "guest: a warn line",
        "guest: an error line",
      ]);
      expect(await g.call("logBadLevel")).toBe(-S.INVALID_ARGUMENT);
    });
  });
});

describe("a host function in the worker runtime", () => {
  it("that has not answered by the call's time limit ends the call as a spinning guest does, and hears of it", async () => {
    signals.length = 0;
    const g = fx.track(
      await startWorkerGuest("caps", fx.locks, fx.log.logger, { plugin: "billing", functions: ["billing"], hostFunctions: functions, callTimeoutMs: 300 }),
    );
    await expect(g.call("waitForHost")).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
    expect(signals[0]!.aborted).toBe(true);
    // Read after the restart, the context's signal is still this call's, not the new instance's.
    expect(waiting.at(-1)!.signal.aborted).toBe(true);
    // The guest was restarted and answers again.
    expect(await g.call("hasCapability", ["billing"])).toBe(1);
  });
});
