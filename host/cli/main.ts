#!/usr/bin/env node
// The lockhost CLI: `run` a host from a TOML config, and inspect or force-release locks.
import { parseArgs } from "node:util";
import { pino } from "pino";
import { createBackend } from "../../plugins/backends/index.js";
import { loadConfig } from "../config/load.js";
import type { LockhostConfig } from "../config/types.js";
import { LockhostError, toLockhostError } from "../errors.js";
import { Host } from "../host.js";
import { LockService, type LockStatus } from "../locking/service.js";

const HELP: Record<string, string> = {
  main: `lockhost: a host for WebAssembly plugins that take distributed locks

Usage: lockhost <command> [options]

Commands:
  run       run the plugins and schedules of a config file
  status    show who holds a lock
  release   force-release a lock (operator action)

Run 'lockhost <command> --help' for a command's options.`,
  run: `Usage: lockhost run --config FILE [--local-nodes N]

Loads every [[plugins]] entry, starts the [[scheduled]] jobs and logs (pino, JSON) to stdout.
On SIGINT or SIGTERM it stops ticking, lets running calls finish for up to
[host].shutdown_timeout_ms, releases every lock it holds and exits 0.

Options:
  -c, --config FILE     the TOML config (default: lockhost.toml)
      --local-nodes N   development: run N hosts in this process, named <node>-1..<node>-N,
                        sharing one memory backend, to watch one node win each tick
                        (memory backend only; default 1)
  -h, --help            this help`,
  status: `Usage: lockhost status KEY --config FILE [--json]

Shows the holder, fence, acquisition and expiry times of the lock KEY. KEY is the full lock
name as the logs show it: "<plugin>:<key>" for a plugin's key, "global:<key>" for a global one,
"lockhost:schedule:<id>" for a schedule's lock.

Options:
  -c, --config FILE   the TOML config naming the backend (default: lockhost.toml)
      --json          print the status as JSON
  -h, --help          this help`,
  release: `Usage: lockhost release --force KEY --config FILE

Deletes the lock KEY whoever holds it. The holder is not told: its next renew or release
reports LOST. Fence counters are kept, so the next holder still gets a higher fence.
--force is required, to make the intent explicit.

Options:
  -c, --config FILE   the TOML config naming the backend (default: lockhost.toml)
  -f, --force         required
  -h, --help          this help`,
};

/** Exit codes: 0 ok, 1 a failure at run time, 2 bad usage or config. */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === "-h" || command === "--help" || command === "help") {
    console.log(HELP.main);
    return command ? 0 : 2;
  }
  if (!(command in HELP) || command === "main") {
    console.error(`lockhost: unknown command "${command}"\n\n${HELP.main}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c", default: "lockhost.toml" },
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        force: { type: "boolean", short: "f" },
        "local-nodes": { type: "string", default: "1" },
      },
    });
  } catch (err) {
    console.error(`lockhost ${command}: ${(err as Error).message}\n\n${HELP[command]}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(HELP[command]);
    return 0;
  }
  const config = await loadConfig(values.config!);
  if (command === "run") return run(config, parseLocalNodes(values["local-nodes"]!, config));

  const key = positionals[0];
  if (positionals.length !== 1 || !key) {
    console.error(`lockhost ${command}: expected exactly one KEY\n\n${HELP[command]}`);
    return 2;
  }
  if (command === "release" && !values.force) {
    console.error(`lockhost release: refusing without --force (it deletes a lock someone may hold)\n\n${HELP.release}`);
    return 2;
  }
  return admin(config, command, key, values.json ?? false);
}

function parseLocalNodes(text: string, config: LockhostConfig): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 16) {
    throw new LockhostError("INVALID_ARGUMENT", `--local-nodes must be an integer from 1 to 16, got "${text}"`);
  }
  if (n > 1 && config.locking.backend !== "memory") {
    throw new LockhostError("INVALID_ARGUMENT", `--local-nodes is for the memory backend; with ${config.locking.backend}, start one process per node`);
  }
  return n;
}

async function run(config: LockhostConfig, localNodes: number): Promise<number> {
  const hosts: Host[] = [];
  if (localNodes === 1) {
    hosts.push(await Host.start(config));
  } else {
    const log = pino({ level: config.host.logLevel });
    const backend = createBackend(config.locking, log, config.source);
    for (let i = 1; i <= localNodes; i++) {
      const node = `${config.host.node}-${i}`;
      const nodeConfig: LockhostConfig = { ...config, host: { ...config.host, node } };
      hosts.push(await Host.start(nodeConfig, { backend, logger: log.child({ node }) }));
    }
  }
  for (const host of hosts) host.scheduler.start();
  const log = hosts[0]!.log;
  return new Promise<number>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (++signals > 1) {
        log.warn({ signal }, "second signal: exiting without waiting");
        resolve(1);
        return;
      }
      log.info({ signal }, "shutting down: no new ticks, waiting for running calls");
      Promise.all(hosts.map((h) => h.stop())).then(
        () => resolve(0),
        (err: unknown) => {
          log.error({ err: (err as Error).message }, "shutdown failed");
          resolve(1);
        },
      );
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
}

async function admin(config: LockhostConfig, command: string, key: string, json: boolean): Promise<number> {
  if (config.locking.backend === "memory") {
    throw new LockhostError(
      "CONFIG_INVALID",
      `lockhost ${command} needs a shared backend: with [locking] backend = "memory" the locks live inside the 'lockhost run' process and no other process can see them (use redis or pg)`,
    );
  }
  const log = pino({ level: "warn" }, pino.destination(2));
  const locks = new LockService(createBackend(config.locking, log, config.source), { node: config.host.node });
  try {
    if (command === "status") {
      const status = await locks.status(key);
      console.log(json ? JSON.stringify(status) : formatStatus(status));
      return 0;
    }
    const released = await locks.forceRelease(key);
    console.log(released ? `released ${key}` : `${key} was not held`);
    return 0;
  } finally {
    await locks.close();
  }
}

/** Human-readable status, one field a line. */
export function formatStatus(s: LockStatus): string {
  if (!s.held) return `${s.key}: not held`;
  const iso = (ms: number): string => new Date(ms).toISOString();
  return [
    `${s.key}: held`,
    `  holder:        plugin ${s.holder.plugin} on node ${s.holder.node}${s.holder.hostname ? ` (host ${s.holder.hostname})` : ""}`,
    `  owner:         ${s.owner}`,
    `  fence:         ${s.fence}`,
    `  acquired_at:   ${iso(s.acquiredAtMs)}`,
    `  expires_at:    ${iso(s.expiresAtMs)}`,
    `  ttl_remaining: ${s.ttlRemainingMs} ms`,
  ].join("\n");
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const e = toLockhostError(err);
    console.error(`lockhost: ${e.code}: ${e.message}`);
    process.exit(e.code === "CONFIG_INVALID" || e.code === "ABI_UNSUPPORTED" ? 2 : 1);
  },
);
