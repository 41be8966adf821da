// lockhost/fence's guard in front of a real node:http server: which fences pass, what a
// refused request is told, and that a failing store answers 503 without taking the server down.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkFence,
  fenceGuard,
  fenceOf,
  FENCE_KINDS,
  lockHeader,
  memoryFenceStore,
  MAX_FENCE,
  MAX_LOCK_BYTES,
  type FenceGuardOptions,
  type FenceRefusal,
  type FenceStore,
} from "../fence/index.js";
import { LOCK_KINDS } from "../kit/kinds.js";
import { fenced, send, type RawHeaders } from "./support/fenced-request.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((r) => {
          s.close(() => r());
          s.closeAllConnections();
        }),
    ),
  );
});

/** A node:http server whose every request goes through a guard made of `options`; 200 with the accepted fence. */
async function guarded(options: FenceGuardOptions = {}): Promise<{ post: (headers: RawHeaders) => ReturnType<typeof send> }> {
  const guard = fenceGuard(options);
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const accepted = fenceOf(req);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(accepted === undefined ? { fenced: false } : { fenced: true, lock: accepted.lock, fence: String(accepted.fence) }));
  };
  return serve((req, res) => guard(req, res, () => handler(req, res)));
}

async function serve(listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ post: (headers: RawHeaders) => ReturnType<typeof send> }> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/write`;
  return { post: (headers) => send("POST", url, headers, { any: "body" }) };
}

const stale = (lock: string, fence: string, last: string): unknown => ({ error: "stale_fence", lock, fence, last_accepted: last });

describe("fenceGuard on node:http", () => {
  it("accepts a first fence, refuses an equal and a lower one with 409, accepts a higher one", async () => {
    const { post } = await guarded();
    expect(await post(fenced("global:ledger", 5))).toEqual({ status: 200, body: { fenced: true, lock: "global:ledger", fence: "5" } });
    expect(await post(fenced("global:ledger", 5))).toEqual({ status: 409, body: stale("global:ledger", "5", "5") });
    expect(await post(fenced("global:ledger", 3))).toEqual({ status: 409, body: stale("global:ledger", "3", "5") });
    expect(await post(fenced("global:ledger", 6))).toEqual({ status: 200, body: { fenced: true, lock: "global:ledger", fence: "6" } });
    expect(await post(fenced("global:ledger", 5))).toEqual({ status: 409, body: stale("global:ledger", "5", "6") });
  });

  it("keeps each lock's fences apart", async () => {
    const { post } = await guarded();
    expect((await post(fenced("plugin-a:orders", 100))).status).toBe(200);
    expect((await post(fenced("plugin-b:orders", 1))).status).toBe(200);
    expect((await post(fenced("plugin-b:orders", 2))).status).toBe(200);
    expect((await post(fenced("plugin-a:orders", 99))).status).toBe(409);
  });

  it("keeps each kind of one name apart: a read/write lock's fences do not refuse the mutex's", async () => {
    const { post } = await guarded();
    expect((await post({ ...fenced("global:ledger", 40), "lockhost-kind": "rw" })).status).toBe(200);
    expect((await post(fenced("global:ledger", 7))).status).toBe(200);
    expect((await post({ ...fenced("global:ledger", 7), "lockhost-kind": "mutex" })).status).toBe(409);
    expect((await post({ ...fenced("global:ledger", 39), "lockhost-kind": "rw" })).status).toBe(409);
    expect((await post({ ...fenced("global:ledger", 41), "lockhost-kind": "Bad Kind" })).status).toBe(400);
  });

  it("knows lockhost's lock kinds, each counting its own fences, and refuses any other kind with 400", async () => {
    expect([...FENCE_KINDS]).toEqual(LOCK_KINDS); // a new kind in kit/kinds.ts must be added to fence/headers.ts
    const { post } = await guarded();
    for (const kind of FENCE_KINDS) expect((await post({ ...fenced("global:k", 5), "lockhost-kind": kind })).status, kind).toBe(200);
    // Before, any lowercase word got a counter of its own: a typo'd kind opened the resource
    // beside the real kind's fences instead of being refused.
    for (const kind of ["mutexx", "queue", "rwlock", "election"]) {
      const reply = await post({ ...fenced("global:k", 6), "lockhost-kind": kind });
      expect(reply, kind).toEqual({
        status: 400,
        body: { error: "bad_fence", reason: `lockhost-kind must be one of mutex, rw, semaphore, fair, leader, got "${kind}"` },
      });
    }
  });

  it("keeps `ledger` and `ledger ` two locks: the holder of `ledger ` does not pass as `ledger`, nor lock its holder out", async () => {
    const { post } = await guarded({ locks: ["global:ledger"] });
    const as = (lock: string, fence: number): RawHeaders => Object.fromEntries([lockHeader(lock), ["lockhost-fence", String(fence)]]);
    // The holder of `global:ledger ` writes with fence 9: before, Node trimmed the header to
    // `global:ledger`, the guard accepted it and refused the real holder's fence 1 with 409.
    expect(await post(as("global:ledger ", 9))).toEqual({
      status: 403,
      body: { error: "lock_not_accepted", lock: "global:ledger ", reason: "this resource accepts fences of other locks" },
    });
    expect(await post(as("global:ledger", 1))).toEqual({ status: 200, body: { fenced: true, lock: "global:ledger", fence: "1" } });
    const any = await guarded();
    expect((await any.post(as("global:ledger ", 9))).body).toEqual({ fenced: true, lock: "global:ledger ", fence: "9" });
    expect((await any.post(as("global:ledger", 1))).body).toEqual({ fenced: true, lock: "global:ledger", fence: "1" });
  });

  it("reads a percent-encoded name back exactly, and a plain one as the UTF-8 bytes older senders send", async () => {
    const { post } = await guarded();
    const names = ["global:ledger ", " lead", "global:100%", "global:%41", "global:é€ ", "global:\u3000", "a b", "global:x\u00a0"];
    for (const [i, name] of names.entries()) {
      const reply = await post(Object.fromEntries([lockHeader(name), ["lockhost-fence", String(i + 1)]]));
      expect(reply.body, JSON.stringify(name)).toEqual({ fenced: true, lock: name, fence: String(i + 1) });
    }
    expect(lockHeader("global:ledger")).toEqual(["lockhost-lock", "global:ledger"]); // what every guard reads
    expect(lockHeader("global:é")).toEqual(["lockhost-lock", "global:\u00c3\u00a9"]); // its UTF-8 bytes, as before
    expect(lockHeader("global:ledger ")).toEqual(["lockhost-lock-encoded", "global:ledger%20"]);
    expect(lockHeader("a\r\n100%é ")).toEqual(["lockhost-lock-encoded", "a%0D%0A100%25%C3%A9%20"]);
    // Either form, lower-case hex too, whatever a sender's encoder writes.
    expect((await post({ "lockhost-lock-encoded": "global%3aledger%20", "lockhost-fence": "100" })).body).toEqual({
      fenced: true,
      lock: "global:ledger ",
      fence: "100",
    });
  });

  it("opens only to the locks it is told of", async () => {
    const { post } = await guarded({ locks: ["global:ledger"] });
    expect((await post(fenced("global:ledger", 1))).status).toBe(200);
    const other = await post(fenced("billing:mine", 5));
    expect(other).toEqual({ status: 403, body: { error: "lock_not_accepted", lock: "billing:mine", reason: "this resource accepts fences of other locks" } });
  });

  it("compares fences above 2^53 exactly (a float would take 2^53 + 1 for 2^53)", async () => {
    const { post } = await guarded();
    expect((await post(fenced("up", "9007199254740992"))).status).toBe(200);
    expect(await post(fenced("up", "9007199254740993"))).toEqual({ status: 200, body: { fenced: true, lock: "up", fence: "9007199254740993" } });
    expect(await post(fenced("up", "9007199254740992"))).toEqual({ status: 409, body: stale("up", "9007199254740992", "9007199254740993") });
    expect((await post(fenced("top", "9223372036854775807"))).status).toBe(200);
    expect((await post(fenced("top", MAX_FENCE))).status).toBe(200); // twenty nines
    expect(await post(fenced("top", "09223372036854775808"))).toEqual({ status: 409, body: stale("top", "9223372036854775808", MAX_FENCE.toString()) });
  });

  it("of concurrent requests with one fence, accepts exactly one", async () => {
    const { post } = await guarded();
    const replies = await Promise.all(Array.from({ length: 20 }, () => post(fenced("race", 7))));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(19);
  });

  it.each<[string, RawHeaders, RegExp]>([
    ["letters", fenced("l", "abc"), /decimal digits only/],
    ["a sign", fenced("l", "+5"), /decimal digits only/],
    ["a negative", fenced("l", "-1"), /decimal digits only/],
    ["hex", fenced("l", "0x10"), /decimal digits only/],
    ["a fraction", fenced("l", "1.5"), /decimal digits only/],
    ["an exponent", fenced("l", "1e3"), /decimal digits only/],
    ["an empty fence", fenced("l", ""), /decimal digits only/],
    ["zero", fenced("l", "0"), /must be positive/],
    ["zeros", fenced("l", "000"), /must be positive/],
    ["21 digits", fenced("l", "1".repeat(21)), /longer than 20 digits/],
    ["a thousand digits", fenced("l", "9".repeat(1000)), /longer than 20 digits/],
    ["two fences", { "lockhost-lock": "l", "lockhost-fence": ["1", "2"] }, /lockhost-fence was sent 2 times/],
    ["two locks", { "lockhost-lock": ["l", "m"], "lockhost-fence": "1" }, /lockhost-lock was sent 2 times/],
    ["a fence without a lock", { "lockhost-fence": "1" }, /without lockhost-lock/],
    ["a lock without a fence", { "lockhost-lock": "l" }, /without lockhost-fence/],
    ["an empty lock", fenced("", 1), /empty/],
    ["a lock over the limit", fenced("k".repeat(MAX_LOCK_BYTES + 1), 1), /601 bytes long, over the limit of 600/],
    ["a lock with a tab", fenced("a\tb", 1), /control character/],
    ["a lock that is not UTF-8", fenced("\u00ff", 1), /not valid UTF-8/],
    [
      "a lock sent both ways",
      { "lockhost-lock": "l", "lockhost-lock-encoded": "l", "lockhost-fence": "1" },
      /send one of lockhost-lock and lockhost-lock-encoded, not both/,
    ],
    ["two encoded locks", { "lockhost-lock-encoded": ["l", "m"], "lockhost-fence": "1" }, /lockhost-lock-encoded was sent 2 times/],
    ["an encoded lock without a fence", { "lockhost-lock-encoded": "l" }, /lockhost-lock-encoded was sent without lockhost-fence/],
    ["an encoded lock with a raw space", { "lockhost-lock-encoded": "a b", "lockhost-fence": "1" }, /must be percent-encoded/],
    ["an encoded lock with a lone %", { "lockhost-lock-encoded": "100%", "lockhost-fence": "1" }, /must be percent-encoded/],
    ["an encoded lock with %zz", { "lockhost-lock-encoded": "a%zz", "lockhost-fence": "1" }, /must be percent-encoded/],
    ["an encoded lock that is not UTF-8", { "lockhost-lock-encoded": "a%FF", "lockhost-fence": "1" }, /not percent-encoded UTF-8/],
    [
      "an encoded lock with a line feed",
      { "lockhost-lock-encoded": "a%0Ab", "lockhost-fence": "1" },
      /lockhost-lock-encoded: the lock name contains a control character/,
    ],
    ["an empty encoded lock", { "lockhost-lock-encoded": "", "lockhost-fence": "1" }, /lockhost-lock-encoded: the lock name is empty/],
  ])("refuses %s with 400", async (_, headers, reason) => {
    const { post } = await guarded();
    const reply = await post(headers);
    expect(reply.status).toBe(400);
    expect(reply.body?.error).toBe("bad_fence");
    expect(reply.body?.reason).toMatch(reason);
  });

  it("takes a lock name of exactly the limit, and UTF-8 lock names as sent", async () => {
    const { post } = await guarded();
    expect((await post(fenced("k".repeat(MAX_LOCK_BYTES), 1))).status).toBe(200);
    const name = "global:grand-livre-é";
    const reply = await post(fenced(Buffer.from(name, "utf8").toString("latin1"), 1)); // the bytes on the wire
    expect(reply).toEqual({ status: 200, body: { fenced: true, lock: name, fence: "1" } });
  });

  it("refuses a request without fence headers with 428, or lets it through when fences are optional", async () => {
    const required = await guarded();
    expect(await required.post({})).toEqual({ status: 428, body: { error: "fence_required", reason: "send lockhost-lock and lockhost-fence" } });
    const optional = await guarded({ required: false });
    expect(await optional.post({})).toEqual({ status: 200, body: { fenced: false } });
    expect((await optional.post(fenced("opt", 2))).status).toBe(200);
    expect((await optional.post(fenced("opt", 1))).status).toBe(409); // optional, but a fence sent is still checked
  });

  it("answers 503 when the store fails, tells onRefused why, and keeps serving", async () => {
    let mode: "reject" | "throw" | "work" = "reject";
    const inner = memoryFenceStore();
    const store: FenceStore = {
      accept(lock, fence) {
        if (mode === "throw") throw new Error("store exploded synchronously");
        if (mode === "reject") return Promise.reject(new Error("store unreachable"));
        return inner.accept(lock, fence);
      },
    };
    const refusals: FenceRefusal[] = [];
    const { post } = await guarded({ store, onRefused: (r) => void refusals.push(r) });
    const unavailable = { status: 503, body: { error: "fence_unavailable", reason: "the fence store did not answer; try again" } };
    expect(await post(fenced("s", 1))).toEqual(unavailable);
    mode = "throw";
    expect(await post(fenced("s", 1))).toEqual(unavailable);
    expect(refusals.map((r) => (r.error === "fence_unavailable" ? (r.cause as Error).message : r.error))).toEqual([
      "store unreachable",
      "store exploded synchronously",
    ]);
    mode = "work";
    expect((await post(fenced("s", 1))).status).toBe(200); // a fence the failing store never took is not burnt
    expect((await post(fenced("s", 1))).status).toBe(409);
  });

  it("answers even when onRefused throws", async () => {
    const { post } = await guarded({
      onRefused: () => {
        throw new Error("logger down");
      },
    });
    expect((await post(fenced("t", 0))).status).toBe(400);
    expect((await post({})).status).toBe(428);
  });

  it("fits an express-style chain: (req, res, next), next called once and only when accepted", async () => {
    type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
    const chain =
      (...layers: Middleware[]) =>
      (req: IncomingMessage, res: ServerResponse): void => {
        const run = (i: number): void => layers[i]?.(req, res, (err?: unknown) => (err === undefined ? run(i + 1) : res.destroy()));
        run(0);
      };
    let handled = 0;
    const guard: Middleware = fenceGuard(); // express's app.post("/write", guard, handler)
    const handler: Middleware = (req, res) => {
      handled++;
      res.end(JSON.stringify({ fence: String(fenceOf(req)?.fence) }));
    };
    const { post } = await serve(chain(guard, handler));
    expect(await post(fenced("x", 4))).toEqual({ status: 200, body: { fence: "4" } });
    expect((await post(fenced("x", 4))).status).toBe(409);
    expect(handled).toBe(1);
  });
});

describe("checkFence", () => {
  it("accepts, refuses stale fences with the last accepted, and refuses bad input without asking the store", async () => {
    const store = memoryFenceStore();
    expect(await checkFence(store, "q", 2n)).toEqual({ status: "accepted", lock: "q", fence: 2n });
    expect(await checkFence(store, "q", 2n)).toEqual({ status: "stale", lock: "q", fence: 2n, last: 2n });
    expect(await checkFence(store, "q", 1n)).toEqual({ status: "stale", lock: "q", fence: 1n, last: 2n });
    const untouched: FenceStore = { accept: () => Promise.reject(new Error("must not be asked")) };
    expect(await checkFence(untouched, "q", 0n)).toEqual({ status: "bad", reason: "the fence must be positive, got 0" });
    expect(await checkFence(untouched, "q", MAX_FENCE + 1n)).toEqual({ status: "bad", reason: "the fence has more than 20 digits" });
    expect(await checkFence(untouched, "", 1n)).toEqual({ status: "bad", reason: "the lock name is empty" });
    expect(await checkFence(untouched, "a\nb", 1n)).toEqual({ status: "bad", reason: "the lock name contains a control character" });
  });
});
