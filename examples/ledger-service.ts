// A ledger that only a current lock holder may write to: the resource's side of fencing, as a
// guest's http capability would meet it. POST /entries {"amount": n} with lockhost-lock and
// lockhost-fence headers appends an entry; GET /balance reads. A stale fence gets 409.
//
//   node dist/examples/ledger-service.js        # prints its URL; PORT and HOST may be set
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { fenceGuard, fenceOf, memoryFenceStore } from "../fence/index.js";

/** One accepted write, with the lock and fence it was made under. */
export interface LedgerEntry {
  readonly amount: number;
  readonly lock: string;
  readonly fence: bigint;
}

/** Options of {@link startLedgerService}. */
export interface LedgerServiceOptions {
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string;
  /** Port; default 0 (any free port: read `url`). */
  readonly port?: number;
  /** Receives one line per accepted or refused write. */
  readonly log?: (line: string) => void;
  /** The lock names whose fences open the ledger; default `["global:ledger"]`. */
  readonly locks?: readonly string[];
}

/** A running ledger service. */
export interface LedgerService {
  /** Where it listens, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** The sum of every accepted entry's amount. */
  balance(): number;
  /** Every accepted entry, oldest first. */
  entries(): readonly LedgerEntry[];
  /** Stops listening and closes its connections. */
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024;

/** Starts the ledger service (fences kept in memory: one process, forgotten on restart). */
export async function startLedgerService(options: LedgerServiceOptions = {}): Promise<LedgerService> {
  const log = options.log ?? ((): void => undefined);
  const entries: LedgerEntry[] = [];
  let balance = 0;
  // Only the ledger's own lock opens it: a plugin holding some other lock of its own cannot write.
  const guard = fenceGuard({
    store: memoryFenceStore(),
    locks: options.locks ?? ["global:ledger"],
    onRefused: (refusal) => {
      if (refusal.error === "stale_fence") {
        log(`refused stale fence ${refusal.fence} for ${refusal.lock} (last accepted ${refusal.last ?? "unknown"})`);
      } else {
        log(`refused: ${refusal.error} (${refusal.status})`);
      }
    },
  });

  const append = (req: IncomingMessage, res: ServerResponse, amount: number): void => {
    const fenced = fenceOf(req);
    if (fenced === undefined) return sendJson(res, 500, { error: "internal", reason: "no fence after the guard" });
    entries.push({ amount, ...fenced });
    balance += amount;
    log(`accepted ${amount} under ${fenced.lock} with fence ${fenced.fence}; balance ${balance}`);
    sendJson(res, 200, { balance, fence: String(fenced.fence) });
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://ledger").pathname;
    if (path === "/balance" && req.method === "GET") return sendJson(res, 200, { balance, entries: entries.length });
    if (path !== "/entries") return sendJson(res, 404, { error: "not_found" });
    if (req.method !== "POST") return sendJson(res, 405, { error: "method_not_allowed" });
    // The body is read before the guard, so that (with the memory store) accepting the fence
    // and appending the entry run in one turn of the event loop: no other write comes between.
    readAmount(req).then(
      (amount) => {
        if (typeof amount === "string") return sendJson(res, 400, { error: "bad_entry", reason: amount });
        guard(req, res, () => append(req, res, amount));
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(":") ? `[${address}]` : address}:${port}`,
    balance: () => balance,
    entries: () => [...entries],
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** The entry's amount (a safe integer), or why the body is not an entry. */
async function readAmount(req: IncomingMessage): Promise<number | string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return `the body is over ${MAX_BODY_BYTES} bytes`;
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return 'the body must be JSON: {"amount": n}';
  }
  const amount = typeof body === "object" && body !== null ? (body as { amount?: unknown }).amount : undefined;
  if (typeof amount !== "number" || !Number.isSafeInteger(amount)) return '"amount" must be an integer';
  return amount;
}

function sendJson(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

// Run alone: start, print the URL, log every write, stop on Ctrl-C.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const service = await startLedgerService({
    host: process.env.HOST ?? "127.0.0.1",
    port: Number(process.env.PORT ?? 0),
    log: (line) => console.log(line),
  });
  console.log(service.url);
  process.once("SIGINT", () => void service.close());
  process.once("SIGTERM", () => void service.close());
}
