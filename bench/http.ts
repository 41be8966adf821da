// Bench part "http": sequential GETs to a local node:http server through a plugin's http
// client versus Node's global fetch (both keep-alive), and versus a bare undici Agent.request
// (the floor the client is built on). The client's share of the guest's http path is its
// p50 against fetch's; the target for the whole guest path is ≤ 1.2× direct fetch. The guest
// path itself: a bench-caps guest's GETs through raw http.request, timed inside the guest, in
// each runtime (inline where this Node has JSPI).
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { LockService } from "../host/locking/service.js";
import { createHttpClient } from "../host/runtime/capabilities/http/index.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { BENCH_FUNCTIONS, capsLoop, fmt, INLINE, interleaved, NOT_MEASURED, ROUNDS, row, sequential, startBenchGuests, startInlineGuests } from "./harness.js";
import { table, type Round } from "./stats.js";

const OPS = Number(process.env.BENCH_HTTP_OPS ?? 2_000);

/** Runs the http part and prints its table. */
export async function httpBench(): Promise<void> {
  const server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const grant = {
    allowedHosts: ["127.0.0.1:*"],
    methods: ["GET"],
    timeoutMs: 10_000,
    maxRequestBytes: 1024,
    maxResponseBytes: 1 << 20,
    headers: { "x-api-key": "bench-secret" },
    allowPrivateRanges: ["127.0.0.0/8"],
    maxRedirects: 5,
  };
  const client = createHttpClient("bench", grant);
  // The guests send what fetch sends: the grant adds the same x-api-key header.
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const [worker] = await startBenchGuests(locks, 1, "worker", { ...BENCH_FUNCTIONS, http: grant }, "bench-caps");
  const [inline] = await startInlineGuests(locks, 1, { ...BENCH_FUNCTIONS, http: grant }, "bench-caps");
  const agent = new Agent();
  const origin = url.slice(0, -1);
  const req = { method: "GET", url, headers: [] } as const;
  const m = await interleaved({
    fetch: () => sequential(OPS, async () => (await fetch(url, { headers: { "x-api-key": "bench-secret" } })).arrayBuffer()),
    undici: () =>
      sequential(OPS, async () => (await agent.request({ origin, path: "/", method: "GET", headers: ["x-api-key", "bench-secret"] })).body.arrayBuffer()),
    client: () => sequential(OPS, () => client.request(req, {})),
    ...(inline && { guestInline: () => capsLoop(inline, OPS, url) }),
    guestWorker: () => capsLoop(worker!, OPS, url),
  });
  await Promise.all([client.close(), agent.close(), worker!.close(), inline?.close()]);
  await locks.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));

  console.log(`\nlockhost bench: sequential GETs to a local server (${ROUNDS} rounds x ${OPS}, medians; ratio: p50 against fetch)\n`);
  console.log(
    table(
      ["path", "GETs/s", "p50 µs", "p99 µs", "p50 ratio"],
      [
        row("global fetch (direct)", m.fetch!, m.fetch),
        row("undici Agent.request (floor)", m.undici!, m.fetch),
        row("lockhost http client", m.client!, m.fetch),
        row("guest GET via inline runtime", m.guestInline ?? NOT_MEASURED, m.fetch),
        row("guest GET via worker runtime", m.guestWorker!, m.fetch),
      ],
    ),
  );
  const noJspi = INLINE ? "" : ` (n/a: Node ${process.versions.node} has no JSPI; npm run bench runs on one that has)`;
  const vsFetch = (r: Round | undefined): string => fmt((r ?? NOT_MEASURED).p50Us / m.fetch!.p50Us, 2);
  console.log(
    `\nclient p50 / fetch p50 = ${vsFetch(m.client)}` +
      `\nguest GET p50 / fetch p50: inline ${vsFetch(m.guestInline)}x${noJspi} (target ≤ 1.2x), worker ${vsFetch(m.guestWorker)}x.`,
  );
}
