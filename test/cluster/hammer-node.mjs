// @ts-check
// One host process of the exclusion check (run by test/cluster/cluster.ts with node, from
// the built dist/). It starts a Host with `guests` worker guests of hammer.wasm, all on
// the same few global keys, and until the deadline each guest loops: enter (take a key), write
// "E <key> <fence> <node>" to the shared log, stay a moment, write "X ...", leave (release).
// The log is opened O_APPEND, so the kernel orders every line: a line written while a lock is
// held lands between that lock's E and X. Prints one JSON summary line on stdout at the end.
import { openSync, writeSync, closeSync } from "node:fs";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";

const opts = JSON.parse(process.argv[2] ?? "{}");
const { Host, resolveConfig } = await import(opts.dist);

const plugins = Array.from({ length: opts.guests }, (_, i) => ({
  name: `hammer-${i}`, wasm: opts.wasm, globalKeys: ["hammer-*"], callTimeoutMs: 10_000,
}));
const config = resolveConfig({ host: { node: opts.node, logLevel: "warn" }, locking: opts.locking, plugins });
const host = await Host.start(config, { logger: pino({ level: "warn" }, pino.destination(2)) });
const fd = openSync(opts.log, "a");
const stats = { node: opts.node, attempts: 0, acquired: 0, contended: 0, errors: 0, errorSamples: /** @type {string[]} */ ([]) };

// Start together: say ready, then wait for the parent's go with the common deadline, since
// hosts take different times to start their guests.
process.stdout.write(`${JSON.stringify({ ready: opts.node })}\n`);
const lines = createInterface({ input: process.stdin });
const go = JSON.parse(await new Promise((resolve) => lines.once("line", resolve)));
opts.endAtMs = go.endAtMs;
// A later line moves the deadline (the fault runner ends a run once its faults are over).
lines.on("line", (line) => void (opts.endAtMs = JSON.parse(line).endAtMs));
await Promise.all(plugins.map(async (p) => {
  while (Date.now() < opts.endAtMs) {
    const keyId = Math.floor(Math.random() * opts.keys);
    stats.attempts++;
    let fence;
    try {
      fence = Number(await host.call(p.name, "enter", [keyId, opts.ttlMs]));
    } catch (err) {
      stats.errors++;
      if (stats.errorSamples.length < 5) stats.errorSamples.push(String(err));
      continue;
    }
    if (fence === 0) {
      stats.contended++;
      // Let the holder finish rather than spin on the key.
      await sleep(Math.random() * opts.holdMs);
      continue;
    }
    if (fence < 0) {
      stats.errors++;
      if (stats.errorSamples.length < 5) stats.errorSamples.push(`enter returned ${fence}`);
      continue;
    }
    stats.acquired++;
    // Write to the fenced register on entering and once more after the pause, which is when
    // a host the test paused past its TTL comes back and must be refused.
    writeSync(fd, `E ${keyId} ${fence} ${opts.node}\nW ${keyId} ${fence} ${opts.node}\n`);
    await sleep(Math.random() * opts.holdMs);
    writeSync(fd, `W ${keyId} ${fence} ${opts.node}\nX ${keyId} ${fence} ${opts.node}\n`);
    let left;
    try {
      left = Number(await host.call(p.name, "leave", [keyId]));
    } catch (err) {
      left = String(err);
    }
    if (left !== 0) {
      stats.errors++;
      if (stats.errorSamples.length < 5) stats.errorSamples.push(`leave returned ${left}`);
    }
  }
}));
closeSync(fd);
lines.close();
process.stdin.destroy();
await host.stop();
process.stdout.write(`${JSON.stringify(stats)}\n`);
