// Bench part "http": sequential GETs to a local node:http server through a plugin's http
// client versus Node's global fetch (both keep-alive), and versus a bare undici Agent.request
// (the floor the client is built on). The client's share of the guest's http path is its
// p50 against fetch's; the target for the whole guest path is ≤ 1.2× direct fetch.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "undici";
import { createHttpClient } from "../host/runtime/capabilities/http/index.js";
import { fmt, interleaved, ROUNDS, row, sequential } from "./harness.js";
import { table } from "./stats.js";

const OPS = Number(process.env.BENCH_HTTP_OPS ?? 2_000);

/** Runs the http part and prints its table. */
export async function httpBench(): Promise<void> {
  const server = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const client = createHttpClient("bench", {
    allowedHosts: ["127.0.0.1"],
    methods: ["GET"],
    timeoutMs: 10_000,
    maxRequestBytes: 1024,
    maxResponseBytes: 1 << 20,
    headers: { "x-api-key": "bench-secret" },
    allowPrivateRanges: ["127.0.0.0/8"],
    maxRedirects: 5,
  });
  const agent = new Agent();
  const origin = url.slice(0, -1);
  const req = { method: "GET", url, headers: [] } as const;
  const m = await interleaved({
    fetch: () => sequential(OPS, async () => (await fetch(url, { headers: { "x-api-key": "bench-secret" } })).arrayBuffer()),
    undici: () => sequential(OPS, async () => (await agent.request({ origin, path: "/", method: "GET", headers: ["x-api-key", "bench-secret"] })).body.arrayBuffer()),
    client: () => sequential(OPS, () => client.request(req, {})),
  });
  await Promise.all([client.close(), agent.close()]);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));

  console.log(`\nlockhost bench: sequential GETs to a local server (${ROUNDS} rounds x ${OPS}, medians; ratio: p50 against fetch)\n`);
  console.log(
    table(
      ["path", "GETs/s", "p50 µs", "p99 µs", "p50 ratio"],
      [row("global fetch (direct)", m.fetch!, m.fetch), row("undici Agent.request (floor)", m.undici!, m.fetch), row("lockhost http client", m.client!, m.fetch)],
    ),
  );
  console.log(`\nclient p50 / fetch p50 = ${fmt(m.client!.p50Us / m.fetch!.p50Us, 2)}`);
}
