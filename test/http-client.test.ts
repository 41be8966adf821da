// The http capability's host-side client against real node:http servers on 127.0.0.1.
import { execFile } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import { lockHeader, parseFenceHeaders } from "../fence/index.js";
import {
  cidrProblem,
  createHttpClient,
  headerProblem,
  hostPatternProblem,
  methodProblem,
  type GuestHttpRequest,
  type HttpClient,
  type HttpGrant,
} from "../host/runtime/capabilities/http/index.js";
import { HostAllowList } from "../host/runtime/capabilities/http/host-pattern.js";
import { AddressPolicy } from "../host/runtime/capabilities/http/address-policy.js";

const SECRET = "s3cret-api-key-value";

interface TestServer {
  readonly origin: string;
  readonly port: number;
  /** Requests that reached the handler, and TCP connections accepted. */
  readonly seen: { requests: number; connections: number };
  close(): Promise<void>;
}

const servers: TestServer[] = [];
const clients: HttpClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void, host = "127.0.0.1"): Promise<TestServer> {
  const seen = { requests: 0, connections: 0 };
  const server = createServer((req, res) => {
    seen.requests++;
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handler(req, res, Buffer.concat(chunks)));
  });
  server.on("connection", () => seen.connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const s: TestServer = {
    origin: `http://${host}:${port}`,
    port,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  servers.push(s);
  return s;
}

function grant(over: Partial<HttpGrant> = {}): HttpGrant {
  return {
    allowedHosts: ["127.0.0.1:*"],
    methods: ["GET", "POST"],
    timeoutMs: 5_000,
    maxRequestBytes: 1024,
    maxResponseBytes: 1 << 20,
    headers: { "x-api-key": SECRET },
    allowPrivateRanges: ["127.0.0.0/8"],
    maxRedirects: 5,
    ...over,
  };
}

function client(over: Partial<HttpGrant> = {}): HttpClient {
  const c = createHttpClient("billing", grant(over));
  clients.push(c);
  return c;
}

function get(url: string, headers: [string, string][] = []): GuestHttpRequest {
  return { method: "GET", url, headers };
}

/** The LockhostError `p` rejects with, after checking it never quotes the grant's secret. */
async function failure(p: Promise<unknown>): Promise<LockhostError> {
  const err = await p.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LockhostError);
  expect((err as LockhostError).message).not.toContain(SECRET);
  return err as LockhostError;
}

const text = (b: Uint8Array) => Buffer.from(b).toString();

describe("http client: round trips", () => {
  it("GETs and POSTs with the guest's and the grant's headers, and returns status, headers and body", async () => {
    const s = await serve((req, res, body) => {
      res.setHeader("set-cookie", ["a=1", "b=2"]);
      res.setHeader("content-type", "application/json");
      res.writeHead(req.method === "POST" ? 201 : 200);
      res.end(JSON.stringify({ method: req.method, key: req.headers["x-api-key"], trace: req.headers["x-trace"], body: body.toString() }));
    });
    const c = client();
    const got = await c.request(get(`${s.origin}/x?q=1`, [["X-Trace", "t1"]]), {});
    expect(got.status).toBe(200);
    expect(JSON.parse(text(got.body))).toEqual({ method: "GET", key: SECRET, trace: "t1", body: "" });
    expect(got.headers.filter(([n]) => n === "set-cookie")).toEqual([
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ]);
    expect(got.headers).toContainEqual(["content-type", "application/json"]);

    const posted = await c.request({ method: "post", url: `${s.origin}/y`, headers: [["content-type", "text/plain"]], body: Buffer.from("hello") }, {});
    expect(posted.status).toBe(201);
    expect(JSON.parse(text(posted.body))).toMatchObject({ method: "POST", key: SECRET, body: "hello" });
    // Pooled: undici may open a second connection when the next request follows at once, not more.
    expect(s.seen.connections).toBeLessThanOrEqual(2);
  });

  it("sends the host's own headers (the fence) given in options", async () => {
    const s = await serve((req, res) => res.end(String(req.headers["lockhost-fence"])));
    const got = await client().request(get(s.origin), { hostHeaders: [["lockhost-fence", "42"]] });
    expect(text(got.body)).toBe("42");
  });

  it("carries a lock name through undici exactly, whatever it holds: lockhost/fence's guard reads back the name sent", async () => {
    const s = await serve((req, res) => {
      const parsed = parseFenceHeaders(req);
      res.end(JSON.stringify(parsed.kind === "fenced" ? { lock: parsed.lock } : parsed));
    });
    const c = client();
    // Edge spaces (trimmed from a plain value), CR and LF (no value may hold them), a tab, `%`,
    // non-ASCII: each arrives as it was.
    for (const lock of ["global:ledger", "global:ledger ", "global:a\r\nb", "global:é€ ", "global:100%", "global:%41 ", "global:\u3000x\u3000"]) {
      const got = await c.request(get(s.origin), { hostHeaders: [[...lockHeader(lock)], ["lockhost-fence", "1"]] });
      const body = JSON.parse(text(got.body)) as { lock?: string; reason?: string };
      // A CR/LF name arrives whole, then the guard's rule refuses control characters by name.
      expect(body, JSON.stringify(lock)).toEqual(
        /[\r\n]/.test(lock) ? { kind: "malformed", reason: "lockhost-lock-encoded: the lock name contains a control character" } : { lock },
      );
    }
  });
});

describe("http client: allow-list and addresses", () => {
  it("refuses a host not in allowed_hosts before connecting, naming host, plugin and list", async () => {
    const s = await serve((_req, res) => res.end("no"));
    const err = await failure(client({ allowedHosts: ["api.example.com", "*.example.com"] }).request(get(`${s.origin}/`), {}));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toBe(`plugin billing may not reach "${new URL(s.origin).host}": allowed_hosts = ["api.example.com", "*.example.com"]`);
    expect(s.seen.connections).toBe(0);
  });

  it("admits only the ports an entry names: the scheme's default without one, any with :*", async () => {
    const s = await serve((_req, res) => res.end("yes"));
    const port = new URL(s.origin).port;
    for (const entries of [["127.0.0.1"], ["127.0.0.1:1"], ["localhost:*"]]) {
      const err = await failure(client({ allowedHosts: entries }).request(get(`${s.origin}/`), {}));
      expect(err.code, entries.join()).toBe("PERMISSION_DENIED");
      expect(err.message).toContain(`may not reach "127.0.0.1:${port}"`);
    }
    expect(s.seen.connections).toBe(0);
    for (const entries of [[`127.0.0.1:${port}`], ["127.0.0.1:*"]]) {
      const res = await client({ allowedHosts: entries }).request(get(`${s.origin}/`), {});
      expect(res.status).toBe(200);
    }
    const list = new HostAllowList(["api.example.com", "*.example.org:8443", "[::1]:*"]);
    expect(list.allows("api.example.com", "")).toBe(true);
    expect(list.allows("api.example.com", "8080")).toBe(false);
    expect(list.allows("a.example.org", "8443")).toBe(true);
    expect(list.allows("a.example.org", "")).toBe(false);
    expect(list.allows("[::1]", "9464")).toBe(true);
  });

  it("matches exact names case-insensitively and wildcards at any depth, never the apex or a look-alike", () => {
    const list = new HostAllowList(["API.example.com", "*.example.org", "[::1]", "10.0.0.1"]);
    expect(list.allows("api.example.com")).toBe(true);
    expect(list.allows("api.example.com.")).toBe(true);
    expect(list.allows("x.api.example.com")).toBe(false);
    expect(list.allows("a.example.org")).toBe(true);
    expect(list.allows("a.b.example.org")).toBe(true);
    expect(list.allows("example.org")).toBe(false);
    expect(list.allows("badexample.org")).toBe(false);
    expect(list.allows("example.org.evil.com")).toBe(false);
    expect(list.allows("[::1]")).toBe(true);
    expect(list.allows("10.0.0.1")).toBe(true);
    expect(new HostAllowList(["::1"]).allows(new URL("http://[0:0::1]/").hostname)).toBe(true);
  });

  it("refuses loopback reached through an allowed name or literal unless allow_private_ranges grants it", async () => {
    const s = await serve((_req, res) => res.end("ok"));
    const closed = client({ allowedHosts: ["localhost:*", "127.0.0.1:*"], allowPrivateRanges: [] });
    const byName = await failure(closed.request(get(`http://localhost:${s.port}/`), {}));
    expect(byName.code).toBe("PERMISSION_DENIED");
    expect(byName.message).toContain('may not reach "localhost" at');
    expect(byName.message).toContain("allow_private_ranges = []");
    const byLiteral = await failure(closed.request(get(`${s.origin}/`), {}));
    expect(byLiteral.code).toBe("PERMISSION_DENIED");
    // Other spellings of the same address are normalised by the URL parser, then checked alike.
    expect((await failure(closed.request(get(`http://127.1:${s.port}/`), {}))).code).toBe("PERMISSION_DENIED");
    expect(s.seen.connections).toBe(0);

    // localhost may also resolve to ::1, which 127.0.0.0/8 does not grant: that address is dropped.
    const open = client({ allowedHosts: ["localhost:*"], allowPrivateRanges: ["127.0.0.0/8"] });
    expect(text((await open.request(get(`http://localhost:${s.port}/`), {})).body)).toBe("ok");
  });

  it("judges IPv4 inside IPv6 (mapped, NAT64, 6to4) and every non-public range", () => {
    const none = new AddressPolicy([]);
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fe80::1",
      "fd00::1",
      "fc00::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b::10.0.0.1",
      "2002:7f00:1::1",
      "::127.0.0.1",
      "fe80::1%eth0",
    ]) {
      expect(none.allows(a), a).toBe(false);
    }
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]) expect(none.allows(a), a).toBe(true);
    const loop = new AddressPolicy(["127.0.0.0/8", "fd00::/8"]);
    expect(loop.allows("127.0.0.5")).toBe(true);
    expect(loop.allows("::ffff:127.0.0.1")).toBe(true);
    expect(loop.allows("fd12::1")).toBe(true);
    expect(loop.allows("10.0.0.1")).toBe(false);
    expect(loop.allows("::1")).toBe(false);
  });
});

describe("http client: redirects", () => {
  it("follows a redirect to an allowed host, and refuses one to a host that is not", async () => {
    const target = await serve((req, res) =>
      res.end(`target ${req.headers["x-api-key"] === SECRET} ${req.headers.authorization ?? "-"} ${req.headers["x-trace"]}`),
    );
    const s = await serve((req, res) => {
      res.writeHead(302, { location: req.url === "/away" ? "http://evil.example/steal" : `http://localhost:${target.port}/t` });
      res.end();
    });
    const c = client({ allowedHosts: ["127.0.0.1:*", "localhost:*"] });
    // The grant's headers go to every allowed hop; the guest's credentials do not leave the origin (as in fetch).
    const got = await c.request(
      get(`${s.origin}/`, [
        ["authorization", "Bearer guest"],
        ["x-trace", "t"],
      ]),
      {},
    );
    expect(got.status).toBe(200);
    expect(text(got.body)).toBe("target true - t");
    const err = await failure(c.request(get(`${s.origin}/away`), {}));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toContain(`may not reach "evil.example" (redirected from ${s.origin})`);
  });

  it("refuses a redirect to an address outside allow_private_ranges", async () => {
    const other = await serve((_req, res) => res.end("x"), "127.0.0.2");
    const s = await serve((_req, res) => res.writeHead(307, { location: `${other.origin}/` }).end());
    const err = await failure(client({ allowedHosts: ["127.0.0.1:*", "127.0.0.2:*"], allowPrivateRanges: ["127.0.0.1/32"] }).request(get(s.origin), {}));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toContain("127.0.0.2");
    expect(other.seen.connections).toBe(0);
  });

  it("turns a POST into a body-less GET on 303 and keeps method and body on 307", async () => {
    const s = await serve((req, res, body) => {
      if (req.url === "/303") return res.writeHead(303, { location: "/echo" }).end();
      if (req.url === "/307") return res.writeHead(307, { location: "/echo" }).end();
      res.end(`${req.method} ${body.toString()} ${req.headers["content-type"] ?? "-"}`);
    });
    const c = client();
    const post = (url: string): GuestHttpRequest => ({ method: "POST", url, headers: [["content-type", "text/plain"]], body: Buffer.from("b") });
    expect(text((await c.request(post(`${s.origin}/303`), {})).body)).toBe("GET  -");
    expect(text((await c.request(post(`${s.origin}/307`), {})).body)).toBe("POST b text/plain");
  });

  it("refuses a redirect whose method is not granted", async () => {
    const s = await serve((_req, res) => res.writeHead(303, { location: "/x" }).end());
    const err = await failure(client({ methods: ["POST"] }).request({ method: "POST", url: s.origin, headers: [] }, {}));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toContain('method "GET": methods = ["POST"]');
  });

  it("stops after max_redirects", async () => {
    const s = await serve((_req, res) => res.writeHead(302, { location: "/again" }).end());
    const err = await failure(client({ maxRedirects: 3 }).request(get(s.origin), {}));
    expect(err.code).toBe("CALL_FAILED");
    expect(err.message).toContain("max_redirects = 3");
    expect(s.seen.requests).toBe(4);
  });
});

describe("http client: time limits and cancellation", () => {
  it("times out against a server that never answers, naming timeout_ms", async () => {
    const s = await serve(() => undefined);
    const started = performance.now();
    const err = await failure(client({ timeoutMs: 150 }).request(get(s.origin), {}));
    expect(err.code).toBe("TIMEOUT");
    expect(err.message).toContain("within 150 ms (timeout_ms = 150)");
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("times out on what is left of the call's time when that is lower", async () => {
    const s = await serve(() => undefined);
    const err = await failure(client().request(get(s.origin), { timeoutMs: 100 }));
    expect(err.code).toBe("TIMEOUT");
    expect(err.message).toContain("within 100 ms (what was left of the call's time; timeout_ms = 5000)");
  });

  it("times out a body that trickles in", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write("x"), 20);
      res.on("close", () => clearInterval(timer));
    });
    const err = await failure(client({ timeoutMs: 250 }).request(get(s.origin), {}));
    expect(err.code).toBe("TIMEOUT");
  });

  it("cancels on the caller's signal with its reason, and at once when already aborted", async () => {
    const s = await serve(() => undefined);
    const c = client();
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error("host shutting down")), 50);
    const err = await failure(c.request(get(s.origin), { signal: ac.signal }));
    expect(err.code).toBe("CANCELLED");
    expect(err.message).toContain("host shutting down");
    const early = await failure(c.request(get(s.origin), { signal: AbortSignal.abort(new Error("gone")) }));
    expect(early.code).toBe("CANCELLED");
    expect(early.message).toContain("gone");
  });
});

describe("http client: size limits", () => {
  it("stops reading a response at max_response_bytes while the server keeps streaming", async () => {
    let written = 0;
    let serverClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (serverClosed = resolve));
    const s = await serve((_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 120);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once("drain", pump);
      };
      res.on("close", serverClosed);
      pump();
    });
    const err = await failure(client({ maxResponseBytes: 64 * 1024 }).request(get(s.origin), {}));
    expect(err.code).toBe("TOO_LARGE");
    expect(err.message).toContain("max_response_bytes = 65536");
    expect(err.message).toContain("plugin billing");
    await closed; // the client dropped the connection rather than draining an endless body
    expect(written).toBeLessThan(32 << 20);
  });

  it("refuses a response whose content-length is over the cap before reading it", async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { "content-length": String(10 << 20) });
      res.write("partial");
    });
    const err = await failure(client({ maxResponseBytes: 1000 }).request(get(s.origin), {}));
    expect(err.code).toBe("TOO_LARGE");
    expect(err.message).toContain(`content-length ${10 << 20}`);
  });

  it("answers a HEAD whose content-length (of the body it does not carry) is over the cap", async () => {
    const s = await serve((_req, res) => res.writeHead(200, { "content-length": String(10 << 20) }).end());
    const got = await client({ methods: ["HEAD"], maxResponseBytes: 1000 }).request({ method: "HEAD", url: s.origin, headers: [] }, {});
    expect(got.status).toBe(200);
    expect(got.body.byteLength).toBe(0);
  });

  it("refuses a request body over max_request_bytes, or any body on GET/HEAD, before connecting", async () => {
    const s = await serve((_req, res) => res.end());
    const c = client({ maxRequestBytes: 10 });
    const big = await failure(c.request({ method: "POST", url: s.origin, headers: [], body: new Uint8Array(11) }, {}));
    expect(big.code).toBe("INVALID_ARGUMENT");
    expect(big.message).toContain("over max_request_bytes = 10");
    const onGet = await failure(c.request({ method: "GET", url: s.origin, headers: [], body: new Uint8Array(1) }, {}));
    expect(onGet.code).toBe("INVALID_ARGUMENT");
    expect(s.seen.connections).toBe(0);
  });
});

describe("http client: bad requests", () => {
  it("refuses host-controlled, invalid and too many headers, saying which", async () => {
    const s = await serve((_req, res) => res.end());
    const c = client();
    const cases: [string, string, string][] = [
      ["Host", "evil.com", '"Host" is set by the host'],
      ["content-length", "5", '"content-length" is set by the host'],
      ["Transfer-Encoding", "chunked", '"Transfer-Encoding" is set by the host'],
      ["lockhost-fence", "999", '"lockhost-fence" is set by the host'],
      ["LockHost-Lock", "k", '"LockHost-Lock" is set by the host'],
      ["lockhost-lock-encoded", "k%20", '"lockhost-lock-encoded" is set by the host'],
      ["bad name", "v", '"bad name" has an invalid name'],
      ["x-a", "v\r\nx-injected: 1", '"x-a" has an invalid value'],
      ["x-b", "nul\0", '"x-b" has an invalid value'],
      ["x-c", "\u0100", '"x-c" has an invalid value'],
      ["X-Api-Key", "mine", "set by the operator's grant"],
    ];
    for (const [name, value, says] of cases) {
      const err = await failure(c.request(get(s.origin, [[name, value]]), {}));
      expect(err.code, name).toBe("INVALID_ARGUMENT");
      expect(err.message).toContain(says);
    }
    const many = Array.from({ length: 65 }, (_, i): [string, string] => [`x-${i}`, "v"]);
    expect((await failure(c.request(get(s.origin, many), {}))).message).toContain("65 headers");
    expect(s.seen.connections).toBe(0);
  });

  it("refuses a method not granted, naming the methods", async () => {
    const s = await serve((_req, res) => res.end());
    const err = await failure(client().request({ method: "DELETE", url: s.origin, headers: [] }, {}));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toBe('plugin billing may not use method "DELETE": methods = ["GET", "POST"]');
  });

  it("refuses URLs that do not parse, other schemes and userinfo", async () => {
    const c = client();
    for (const [url, says] of [
      ["not a url", "not a valid URL"],
      ["ftp://127.0.0.1/", 'scheme "ftp"'],
      ["file:///etc/passwd", 'scheme "file"'],
      ["http://u:p@127.0.0.1/", "user name or password"],
    ]) {
      const err = await failure(c.request(get(url!), {}));
      expect(err.code, url).toBe("INVALID_ARGUMENT");
      expect(err.message).toContain(says);
    }
  });
});

describe("http client: failures on the way", () => {
  it("reports a refused connection as CALL_FAILED naming the origin and the cause", async () => {
    const s = await serve(() => undefined);
    await s.close();
    const err = await failure(client().request(get(`${s.origin}/path?token=x`), {}));
    expect(err.code).toBe("CALL_FAILED");
    expect(err.message).toContain(`http request to ${s.origin} failed`);
    expect(err.message).toContain("ECONNREFUSED");
    expect(err.message).not.toContain("token=x");
  });

  it("reports a TLS failure as CALL_FAILED", async () => {
    const s = await serve((_req, res) => res.end("plain http"));
    const err = await failure(client().request(get(`https://127.0.0.1:${s.port}/`), {}));
    expect(err.code).toBe("CALL_FAILED");
    expect(err.message).toMatch(new RegExp(`^plugin billing: http request to https://127.0.0.1:${s.port} failed: TLS: .*\\[ERR_SSL_`));
  });

  it("reports a name that does not resolve as CALL_FAILED", async () => {
    const err = await failure(client({ allowedHosts: ["no-such-host.invalid"] }).request(get("http://no-such-host.invalid/"), {}));
    expect(err.code).toBe("CALL_FAILED");
    expect(err.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });

  it("fails requests after close() with CLOSED", async () => {
    const c = createHttpClient("billing", grant());
    await c.close();
    expect((await failure(c.request(get("http://127.0.0.1:1/"), {}))).code).toBe("CLOSED");
  });
});

describe("http client: loading", () => {
  it("loads undici at the first request, not when the module is imported or a client created", async () => {
    // undici is CommonJS: whoever imported it, it is in the CommonJS module cache.
    const index = pathToFileURL(join(import.meta.dirname, "../host/runtime/capabilities/http/index.ts")).href;
    const script = `
      import { createRequire } from "node:module";
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((p) => p.includes("/node_modules/undici/"));
      const { createHttpClient } = await import(${JSON.stringify(index)});
      const c = createHttpClient("p", { allowedHosts: ["127.0.0.1:*"], methods: ["GET"], timeoutMs: 2000, maxRequestBytes: 1,
        maxResponseBytes: 1, headers: {}, allowPrivateRanges: ["127.0.0.0/8"], maxRedirects: 0 });
      const before = loaded();
      await c.request({ method: "GET", url: "http://127.0.0.1:1/", headers: [] }, {}).catch(() => undefined);
      console.log(JSON.stringify({ before, after: loaded() }));
      await c.close();`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { timeout: 20_000 });
    expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({ before: false, after: true });
  });
});

describe("http grant validation helpers", () => {
  it("hostPatternProblem", () => {
    for (const ok of [
      "api.example.com",
      "API.Example.COM",
      "*.example.com",
      "localhost",
      "127.0.0.1",
      "::1",
      "[::1]",
      "xn--bcher-kva.example",
      "api.example.com:8443",
      "127.0.0.1:*",
      "[::1]:8080",
      "*.example.com:443",
    ]) {
      expect(hostPatternProblem(ok), ok).toBeUndefined();
    }
    for (const bad of [
      "",
      "*",
      "*.com",
      "https://api.example.com",
      "api.example.com:0",
      "api.example.com:99999",
      "api.example.com:x",
      "[::1]:x",
      "api.example.com/x",
      "a..b",
      "-a.com",
      "a*.example.com",
      "ex ample.com",
      "bücher.example",
      "[127.0.0.1]",
      "[nope]",
      "999.1.1.1",
      "*.127.0.0.1",
    ]) {
      expect(hostPatternProblem(bad), bad).toMatch(/^allowed_hosts entry/);
    }
  });

  it("cidrProblem", () => {
    for (const ok of ["127.0.0.0/8", "10.0.0.1", "fd00::/8", "::1/128", "0.0.0.0/0"]) expect(cidrProblem(ok), ok).toBeUndefined();
    for (const bad of ["127.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/8/8", "localhost/8", "10.0.0.0/x", ""]) {
      expect(cidrProblem(bad), bad).toMatch(/^allow_private_ranges entry/);
    }
  });

  it("methodProblem", () => {
    for (const ok of ["GET", "POST", "PATCH", "PROPFIND"]) expect(methodProblem(ok), ok).toBeUndefined();
    expect(methodProblem("get")).toContain("uppercase");
    expect(methodProblem("CONNECT")).toContain("not allowed");
    expect(methodProblem("TRACE")).toContain("not allowed");
    expect(methodProblem("GE T")).toContain("not an HTTP method");
    expect(methodProblem("")).toContain("not an HTTP method");
  });

  it("headerProblem never quotes the value", () => {
    expect(headerProblem("authorization", "Bearer abc")).toBeUndefined();
    expect(headerProblem("x-tab", "a\tb")).toBeUndefined();
    const bad = headerProblem("authorization", `Bearer ${SECRET}\n`);
    expect(bad).toContain('"authorization" has an invalid value');
    expect(bad).not.toContain(SECRET);
    expect(headerProblem("host", "x")).toContain("set by the host");
    expect(headerProblem("lockhost-fence", "1")).toContain("set by the host");
    expect(headerProblem("", "x")).toContain("invalid name");
  });
});
