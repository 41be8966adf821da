// @ts-check
// One host process of the exclusion check (run by test/cluster/cluster.ts with node, from
// the built dist/). It starts a Host with `guests` worker guests of hammer.wasm, all on
// the same few global keys, and until the deadline each guest loops: enter (take a key), write
// "E <key> <fence> <node> [mode]" to the shared log, stay a moment, write "X ...", leave
// (release). Mutexes and writers write to the key's fenced register (W); readers and permits
// only enter and exit.
// The log is opened O_APPEND, so the kernel orders every line: a line written while a lock is
// held lands between that lock's E and X. Prints one JSON summary line on stdout at the end.
import { openSync, writeSync, closeSync } from "node:fs";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";

const opts = JSON.parse(process.argv[2] ?? "{}");
const { Host, resolveConfig } = await import(opts.dist);

const plugins = Array.from({ length: opts.guests }, (_, i) => ({
  name: `hammer-${i}`,
  wasm: opts.wasm,
  globalKeys: ["hammer-*"],
  callTimeoutMs: 10_000,
}));
const config = resolveConfig({ host: { node: opts.node, logLevel: "warn" }, locking: opts.locking, plugins });
const host = await Host.start(config, { logger: pino({ level: "warn" }, pino.destination(2)) });
const fd = openSync(opts.log, "a");
const stats = {
  node: opts.node,
  attempts: 0,
  acquired: 0,
  contended: 0,
  errors: 0,
  errorSamples: /** @type {string[]} */ ([]),
  errorKinds: /** @type {Record<string, number>} */ ({}),
};
/** Counts an error by what it was (its sample text), and keeps the first few samples. */
function error(what) {
  stats.errors++;
  stats.errorKinds[what] = (stats.errorKinds[what] ?? 0) + 1;
  if (stats.errorSamples.length < 5) stats.errorSamples.push(what);
}

// Start together: say ready, then wait for the parent's go with the common deadline, since
// hosts take different times to start their guests.
process.stdout.write(`${JSON.stringify({ ready: opts.node })}\n`);
const lines = createInterface({ input: process.stdin });
const go = JSON.parse(await new Promise((resolve) => lines.once("line", resolve)));
opts.endAtMs = go.endAtMs;
// A later line moves the deadline (the fault runner ends a run once its faults are over).
lines.on("line", (line) => void (opts.endAtMs = JSON.parse(line).endAtMs));
await Promise.all(
  plugins.map(async (p) => {
    while (Date.now() < opts.endAtMs) {
      const keyId = Math.floor(Math.random() * opts.keys);
      stats.attempts++;
      // mode: 0 mutex, 1 reader, 2 writer, 3 permit (hammer.ts enterAs); tag: the log's mode field.
      const { mode, tag } = pick(opts.kind);
      let fence;
      // The lock (no keepalive) ends at its TTL from this send: a section must begin before then.
      const sentAt = performance.now();
      try {
        fence = Number(
          mode === 0
            ? await host.call(p.name, "enter", [keyId, opts.ttlMs])
            : await host.call(p.name, "enterAs", [keyId, opts.ttlMs, mode, opts.kind?.permits ?? 0]),
        );
      } catch (err) {
        error(String(err));
        continue;
      }
      if (fence === 0) {
        stats.contended++;
        // Let the holder finish rather than spin on the key.
        await sleep(Math.random() * opts.holdMs);
        continue;
      }
      if (fence < 0) {
        error(`enter returned ${fence}`);
        continue;
      }
      stats.acquired++;
      if (performance.now() - sentAt >= opts.ttlMs) {
        // The answer came back (or this process got the CPU again) only after the lock's TTL: the
        // lock may have ended and another holder entered, so acting on it now would be a client
        // that does not check its lease. Seen on a loaded machine (load 36+): an entry logged 1+ s
        // after its acquisition, below a fence entered meanwhile. Not entered; counted.
        error("entered past its TTL (not entered)");
        try {
          await host.call(p.name, "leave", [keyId]);
        } catch {
          // its lease ends at its TTL
        }
        continue;
      }
      // Write to the fenced register on entering and once more after the pause, which is when
      // a host the test paused past its TTL comes back and must be refused.
      const writes = tag === "" || tag === " w";
      writeSync(fd, `E ${keyId} ${fence} ${opts.node}${tag}\n${writes ? `W ${keyId} ${fence} ${opts.node}\n` : ""}`);
      await sleep(Math.random() * opts.holdMs);
      writeSync(fd, `${writes ? `W ${keyId} ${fence} ${opts.node}\n` : ""}X ${keyId} ${fence} ${opts.node}\n`);
      let left;
      try {
        left = Number(await host.call(p.name, "leave", [keyId]));
      } catch (err) {
        left = String(err);
      }
      if (left !== 0) error(`leave returned ${left}`);
    }
  }),
);
closeSync(fd);
lines.close();
process.stdin.destroy();
await host.stop();
process.stdout.write(`${JSON.stringify(stats)}\n`);

/** The mode of one attempt under `kind` (see HammerOptions.kind), and its mode field in the log. */
function pick(kind = { kind: "mutex" }) {
  if (kind.kind === "rw") return Math.random() < kind.writerShare ? { mode: 2, tag: " w" } : { mode: 1, tag: " r" };
  if (kind.kind === "semaphore") return { mode: 3, tag: ` p${kind.permits}` };
  return { mode: 0, tag: "" };
}
