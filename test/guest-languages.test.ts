// Guests in Rust and C, in every runtime this Node has: the example plugins built from
// plugins/guests/rust and plugins/guests/c (a scheduled job under a lock, a fenced write,
// read/write locks and a semaphore), and WASI basics (`wasi = true`) for a C guest on
// wasi-libc and a Rust guest on wasm32-wasi std. The ABI's cases per language (bad input,
// outcomes, fences) run in guest-runtime.test.ts against each language's twin of one guest.
// The SDK guests (test/guests/rust/sdk, test/guests/c/sdk.c) take string arguments as UTF-8
// (ptr, len), declare their schedules as UTF-8, and use config, log, a host function and the
// capability query through the SDKs' wrappers, and HTTP through them against a real server the
// test starts (GET and POST with headers and a body, a reply longer than the guest's buffer, a
// fenced write and a stale one refused by lockhost/fence's guard, the schedule's lock's fence, a
// non-2xx status, the allow-list's refusals).
import { createServer, type IncomingMessage, type Server } from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fenceGuard } from "../fence/index.js";
import * as S from "../abi/status.js";
import { parseConfig } from "../host/config/load.js";
import type { HostFunctions } from "../host/runtime/capabilities/functions.js";
import type { HttpGrant } from "../host/runtime/capabilities/http/index.js";
import { expandScheduled } from "../host/scheduler/declared.js";
import { startGuest, GUEST_RUNTIMES, type TestGuestOptions } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";
import { closeServer, listenLocal } from "./support/http-server.js";

const INFO = 30; // pino's level numbers
const WARN = 40;
const ERROR = 50;

/** The embedder's function the SDK guests call: bytes back as they came, or a throw for a leading "!". */
const functions: HostFunctions = {
  billing: { echo: (input) => (input.byteLength > 0 && input[0] === 0x21 ? Promise.reject(new Error("no bangs")) : Promise.resolve(input)) },
};

/** What the test server received: method, path, headers and body of each request. */
const received: { method: string; url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
let server: Server;
let base: string;
/** The ledger's side of fencing: it accepts a write only with a fence above any it has seen for the lock. */
const guard = fenceGuard();

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url === "/fenced") return guard(req, res, () => res.writeHead(201, { "content-type": "text/plain" }).end(`ok ${body}`));
      if (req.url === "/missing") return res.writeHead(404, { "content-type": "text/plain" }).end("no such thing");
      if (req.url === "/big") return res.writeHead(200, { "content-type": "text/plain" }).end("b".repeat(1_000));
      res.writeHead(req.method === "POST" ? 201 : 200, { "content-type": "text/plain", "x-test": "yes" });
      res.end(`${req.method} ${req.url} ${body}`);
    });
  });
  base = await listenLocal(server);
});
afterAll(async () => {
  await closeServer(server);
});

/** The SDK guests' HTTP grant: the test server, reachable although it is loopback. */
const HTTP: HttpGrant = {
  allowedHosts: ["127.0.0.1:*"],
  methods: ["GET", "POST"],
  timeoutMs: 5_000,
  maxRequestBytes: 1 << 20,
  maxResponseBytes: 100_000,
  headers: { "x-api-key": "s3cret-value" },
  allowPrivateRanges: ["127.0.0.0/8"],
  maxRedirects: 0,
};

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime) => {
  const f = guestFixture();

  describe.each(["rust", "c"])("the %s example plugin", (lang) => {
    const example = () => startGuest(`${lang}-fenced`, f.locks, f.log.logger, { runtime, kind: "example", globalKeys: ["ledger"] }).then(f.track);

    it("runs its scheduled job under a lock, and finds the lock held by another holder contended", async () => {
      const a = await example();
      expect(await a.call("run")).toBe(1);
      const other = await f.locks.tryLock("daily-report", { ttlMs: 10_000, scope: { plugin: "test" } });
      expect(other).toBeTruthy();
      expect(await a.call("run")).toBe(0);
      await f.locks.release(other!);
      expect(await a.call("run")).toBe(1);
      expect(await a.call("lostCount")).toBe(0);
    });

    it("writes with its lock's fence, and the resource refuses a stale fence", async () => {
      const a = await example();
      expect(await a.call("fencedWrite", [5])).toBe(5n);
      expect(await a.call("fencedWrite", [3])).toBe(8n);
      expect(await a.call("staleWrite", [1])).toBe(-1n); // fence 1 was used by the first write
      expect(await a.call("fencedWrite", [1])).toBe(9n);
    });

    it("shares a read lock between readers, refuses a writer meanwhile, and counts a semaphore's permits", async () => {
      const a = await example();
      expect(await a.call("shared")).toBe(1);
      expect(f.locks.heldCount).toBe(0); // every lock was dropped, so released
    });
  });

  describe.each([
    ["Rust", "rust-sdk", "the allocator grows"],
    ["C", "c-sdk", "a static arena of 4096 bytes"],
  ])("the %s SDK guest", (_lang, wasm, allocator) => {
    const sdkGuest = (options: TestGuestOptions = {}) =>
      startGuest(wasm, f.locks, f.log.logger, {
        runtime,
        plugin: "billing",
        functions: ["billing"],
        hostFunctions: functions,
        config: { ledger_url: "http://ledger.local" },
        logLevel: "info",
        ...options,
      }).then(f.track);
    const guestLines = () =>
      f.log
        .messages()
        .filter((m) => m.startsWith("guest: "))
        .map((m) => m.slice(7));

    it("receives string arguments as UTF-8 (ptr, len), two i32 parameters each, an empty one as (0, 0)", async () => {
      const g = await sdkGuest();
      expect(g.exportSignature("greet")?.params).toEqual(["i32", "i32", "i32"]);
      expect(await g.call("greet", ["wörld ✓", 3])).toBe(Buffer.byteLength("wörld ✓"));
      expect(await g.call("concat", ["", "b"])).toBe(1);
      expect(await g.call("concat", ["a\u0000z", "é".repeat(1000)])).toBe(3 + 2000);
      expect(guestLines().slice(0, 2)).toEqual(["hello wörld ✓ x3", "+b"]);
      // Every call's strings are freed after it: 20 calls of 1,000 bytes each pass through the C arena of 4 KiB.
      for (let i = 0; i < 20; i++) expect(await g.call("greet", ["y".repeat(1000), i])).toBe(1000);
    });

    it(`refuses arguments that do not make the export's parameters, naming them; a string over ${allocator} ${
      wasm === "c-sdk" ? "fails the call like a trap" : "arrives"
    }`, async () => {
      const g = await sdkGuest();
      await expect(g.call("greet", ["x"])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message:
          "export greet(i32, i32, i32) of plugin billing takes 3 parameter(s), got 1 argument(s) that make 2 (a string is 2 of them, ptr and len: " +
          "this guest receives UTF-8 as (ptr, len))",
      });
      const long = g.call("greet", ["z".repeat(5000), 1]);
      if (wasm === "c-sdk") {
        await expect(long).rejects.toMatchObject({ code: "GUEST_TRAP", message: expect.stringContaining("lockhost_alloc_utf8(5000) returned 0") });
      } else {
        expect(await long).toBe(5000);
      }
      expect(await g.call("greet", ["after", 2])).toBe(5);
    });

    it("declares its schedules as UTF-8: a short [[scheduled]] entry runs each", async () => {
      const g = await sdkGuest();
      expect(g.exportSignature("lockhost_schedules_utf8")).toEqual({ params: [], results: ["i64"] });
      const config = parseConfig(`[[plugins]]\nname = "billing"\nwasm = "sdk.wasm"\n[[scheduled]]\nplugin = "billing"\nhint = "node_local"`, {
        source: "lockhost.toml",
        baseDir: "/srv",
        env: {},
      });
      const expanded = await expandScheduled(config, new Map([["billing", g]]));
      expect(expanded.map((s) => [s.id, s.export, s.schedule])).toEqual([
        ["billing.tick", "tick", { kind: "interval", everyMs: 5_000, text: "5s" }],
        ["billing.report", "report", { kind: "cron", expression: "0 3 * * *" }],
      ]);
      expect(await g.call("report")).toBe(2);
    });

    it("reads config, logs at each level, calls a host function (its reply read back whole) and asks for capabilities", async () => {
      const g = await sdkGuest();
      expect(await g.call("config", ["ledger_url"])).toBe("http://ledger.local".length);
      expect(await g.call("config", ["missing"])).toBe(-S.NOT_FOUND);
      expect(await g.call("echo", ["héllo"])).toBe(6);
      expect(await g.call("echo", ["!boom"])).toBe(-S.CALL_FAILED);
      expect(await g.call("capability", ["billing"])).toBe(1);
      expect(await g.call("capability", ["http"])).toBe(0);
      expect(await g.call("capability", ["config"])).toBe(1);
      expect(guestLines()).toEqual([
        "config ledger_url=http://ledger.local (length ok: true)",
        "config missing: NOT_FOUND (3)",
        "echo héllo (6)",
        "echo failed: CALL_FAILED (15): host function billing.echo failed: Error: no bangs",
        "capability billing: yes",
        "capability http: no",
        "capability config: yes",
      ]);
      await g.call("levels");
      // log_level = "info": the debug line costs nothing and is not logged.
      expect(f.log.lines.filter((l) => l.msg.startsWith("guest: level")).map((l) => [l.level, l.msg])).toEqual([
        [INFO, "guest: level info"],
        [WARN, "guest: level warn"],
        [ERROR, "guest: level error"],
      ]);
    });

    it("campaigns, proclaims, reads the leader's JSON, resigns, and takes a fair mutex through the SDK's wrappers", async () => {
      const g = await sdkGuest();
      const term = (await g.call("elect", ["main"])) as number;
      expect(term).toBeGreaterThan(0);
      const lines = guestLines();
      expect(lines.map((l) => (l.startsWith("leader ") ? "leader" : l))).toEqual([
        "campaign again: timed out",
        "proclaim: ok",
        "leader",
        "resign: ok",
        "leader",
        "fair: held",
      ]);
      const leaders = lines.filter((l) => l.startsWith("leader ")).map((l) => JSON.parse(l.slice(7)));
      expect(leaders[0]).toMatchObject({ key: "main", held: true, plugin: "billing", value: "v2", term });
      expect(leaders[1]).toEqual({ key: "main", held: false });
      // A new leadership's term is higher; every lock was resigned or released.
      expect(await g.call("elect", ["main"])).toBeGreaterThan(term);
      expect(f.locks.heldCount).toBe(0);
    });

    describe("HTTP through the SDK's wrappers, against a real server", () => {
      beforeEach(() => void (received.length = 0));
      /** request(head, body, key, cap): the guest's export; status or -code. */
      const http = (head: string, body = "", key = "", cap = 512) =>
        sdkGuest({ http: HTTP }).then((g) => g.call("request", [head.replace("BASE", base), body, key, cap]));

      it("sends a GET and a POST with their headers and body, and reads the status, a header and the body", async () => {
        expect(await http("GET BASE/hello\nx-trace: sdk")).toBe(200);
        expect(received[0]).toMatchObject({ method: "GET", url: "/hello", body: "", headers: { "x-trace": "sdk", "x-api-key": "s3cret-value" } });
        expect(await http("POST BASE/entries\ncontent-type: application/json\nx-trace: sdk", '{"amount":1}')).toBe(201);
        expect(received[1]).toMatchObject({ method: "POST", url: "/entries", body: '{"amount":1}' });
        expect(received[1]!.headers).toMatchObject({ "content-type": "application/json", "x-trace": "sdk", "x-api-key": "s3cret-value" });
        expect(received.map((r) => r.headers["lockhost-fence"])).toEqual([undefined, undefined]);
        expect(guestLines()).toEqual([
          expect.stringMatching(/^http 200 content-type=text\/plain body=GET \/hello {2}\(\d+ bytes, read first\)$/),
          expect.stringMatching(/^http 201 content-type=text\/plain body=POST \/entries \{"amount":1\} \(\d+ bytes, read first\)$/),
        ]);
      });

      it("reads a response longer than its buffer whole from the kept reply, without sending the request again", async () => {
        expect(await http("GET BASE/big", "", "", 16)).toBe(200);
        expect(received).toHaveLength(1);
        expect(guestLines()).toEqual([
          expect.stringMatching(new RegExp(`^http 200 content-type=text/plain body=${"b".repeat(1_000)} \\(\\d+ bytes, read again\\)$`)),
        ]);
      });

      it("sends a held lock's name, kind and fence; the resource refuses a stale fence (409), and the guest gets that status", async () => {
        const key = `acct-${runtime}-${wasm}`;
        expect(await http("POST BASE/fenced", "first", key)).toBe(201);
        expect(received[0]!.headers).toMatchObject({ "lockhost-lock": `billing:${key}`, "lockhost-fence": "1", "lockhost-kind": "mutex" });
        // A newer holder writes with fence 5 (as after this guest's lease ended): the guest's next fence, 2, is stale.
        const newer = await fetch(`${base}/fenced`, {
          method: "POST",
          headers: { "lockhost-lock": `billing:${key}`, "lockhost-fence": "5", "lockhost-kind": "mutex" },
          body: "newer",
        });
        expect(newer.status).toBe(201);
        expect(await http("POST BASE/fenced", "late", key)).toBe(409);
        expect(received.map((r) => [r.body, r.headers["lockhost-fence"]])).toEqual([
          ["first", "1"],
          ["newer", "5"],
          ["late", "2"],
        ]);
        expect(guestLines()[1]).toMatch(
          /^http 409 content-type=application\/json; charset=utf-8 body=\{"error":"stale_fence",.*"fence":"2","last_accepted":"5"\} \(\d+ bytes, read first\)$/,
        );
        // While another holds the lock, the guest sends nothing.
        const other = await f.locks.tryLock(key, { ttlMs: 10_000, scope: { plugin: "billing" } });
        expect(await http("POST BASE/fenced", "never", key)).toBe(-1000);
        await f.locks.release(other!);
        expect(received).toHaveLength(3);
      });

      it("sends the scheduled call's lock's fence (handle 0) during a scheduled call, and is refused it outside one", async () => {
        const g = await sdkGuest({ http: HTTP });
        const lease = (await f.locks.tryLock(`tick-${runtime}-${wasm}`, { ttlMs: 10_000, scope: { plugin: "billing" } }))!;
        expect(await g.call("scheduledRequest", [`POST ${base}/fenced`, "tick"], { scheduleLease: lease })).toBe(201);
        expect(received[0]!.headers).toMatchObject({ "lockhost-lock": lease.name, "lockhost-fence": String(lease.fence), "lockhost-kind": "mutex" });
        expect(await g.call("scheduledRequest", [`POST ${base}/fenced`, "no tick"])).toBe(-S.INVALID_HANDLE);
        expect(received).toHaveLength(1);
        expect(guestLines()).toEqual(["scheduled 201", "scheduled failed: INVALID_HANDLE (8)"]);
        await f.locks.release(lease);
      });

      it("returns a non-2xx status as the status, with its body", async () => {
        expect(await http("GET BASE/missing")).toBe(404);
        expect(guestLines()).toEqual([expect.stringMatching(/^http 404 content-type=text\/plain body=no such thing \(\d+ bytes, read first\)$/)]);
      });

      it("is refused a host outside the allow-list and a method it does not allow, before any connection", async () => {
        expect(await http("GET http://api.example.com/x")).toBe(-S.PERMISSION_DENIED);
        expect(await http("DELETE BASE/entries")).toBe(-S.PERMISSION_DENIED);
        expect(received).toEqual([]);
        expect(guestLines()).toEqual([
          expect.stringMatching(/^http failed: PERMISSION_DENIED \(10\): plugin billing may not reach "api\.example\.com"/),
          expect.stringMatching(/^http failed: PERMISSION_DENIED \(10\): plugin billing may not use method "DELETE"/),
        ]);
      });
    });
  });

  describe("WASI basics (wasi = true)", () => {
    describe.each([
      ["C on wasi-libc", "c-printf", "took k1 with fence 1, 100.0% done", "a warning from C", "fopen failed as expected"],
      ["Rust on wasm32-wasi std", "rust-wasi-std", "took k1 with fence 1", 'status {"key":"test:k1","held":true', "open failed as expected"],
    ])("%s", (_name, wasm, stdout, stderr, opened) => {
      it("loads and runs: stdout at info and stderr at warn in the plugin's log, with clocks and random bytes", async () => {
        const a = await startGuest(wasm, f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
        expect(await a.call("report", [1])).toBe(1n);
        expect(f.log.messages()).toContain(`guest: ${stdout}`);
        const warn = f.log.lines.find((l) => l.msg.startsWith(`guest: ${stderr}`));
        expect(warn?.level).toBe(WARN);
        expect(await a.call("sources")).toBe(1);
      });

      it("answers ENOSYS to a WASI call outside the stubbed set (no file system), and the call goes on", async () => {
        const a = await startGuest(wasm, f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
        expect(await a.call("openFile")).toBe(0);
        expect(f.log.messages().some((m) => m.startsWith(`guest: ${opened}`))).toBe(true);
      });

      it("refuses to load without wasi = true, naming the import and the key that would allow it", async () => {
        await expect(startGuest(wasm, f.locks, f.log.logger, { runtime })).rejects.toMatchObject({
          code: "ABI_UNSUPPORTED",
          message: expect.stringMatching(/imports wasi_snapshot_preview1\.\w+ \(WASI\), .*set wasi = true in its \[\[plugins\]\] entry/),
        });
      });
    });

    it("ends a call that calls proc_exit as a trap, releasing its locks, and restarts the guest", async () => {
      const a = await startGuest("c-printf", f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
      await expect(a.call("quit")).rejects.toMatchObject({ code: "GUEST_TRAP", message: expect.stringContaining("proc_exit(3)") });
      expect(await a.call("report", [2])).toBe(1n);
    });
  });
});
