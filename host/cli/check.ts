// `lockhost check`: everything `run` would do before it runs anything, without running it:
// the config, each plugin (compiled, checked against the ABI, instantiated in its runtime and
// closed), each schedule's export, and the backend (connected to, asked, closed). Prints what
// would run, or every fault found with its code.
import { pino } from "pino";
import { isPermanent, LockhostError, toLockhostError } from "../../kit/errors.js";
import { allProblems } from "../config/reader.js";
import { ALL_DECLARED } from "../config/schema.js";
import { createBackend } from "../registry/create.js";
import { formatListen } from "../config/listen.js";
import type { LockhostConfig, ScheduledConfig } from "../config/types.js";
import { expandScheduled } from "../scheduler/declared.js";
import { checkScheduledExports } from "../host.js";
import { startPluginGuest } from "../runtime/start-plugin.js";
import { LockService } from "../locking/service.js";
import type { GuestInstance } from "../runtime/guest-instance.js";
import { summaryLines } from "./summary.js";

/** One finding: what was checked, and the fault if any. */
interface Finding {
  readonly what: string;
  readonly fault?: { readonly code: string; readonly message: string };
}

/**
 * What each plugin is granted beyond locks: its config keys (never their values: some are
 * secrets), where its HTTP requests may go, and its host function namespaces.
 */
export function grantLines(config: LockhostConfig): string[] {
  return config.plugins.map((p) => {
    const keys = Object.keys(p.config);
    const http = p.http
      ? `http to ${p.http.allowedHosts.join(", ")} ` +
        `(${p.http.methods.join(", ")}${Object.keys(p.http.headers).length > 0 ? `; headers ${Object.keys(p.http.headers).join(", ")}` : ""})`
      : "no http";
    return (
      `plugin ${p.name} may: config ${keys.length > 0 ? keys.join(", ") : "none"}; ${http}; ` +
      `functions ${p.functions.length > 0 ? p.functions.join(", ") : "none"}`
    );
  });
}

/**
 * The schedules that would run, their exports checked against the plugins that loaded; every
 * schedule whose plugin did not load is a fault of its own (its export cannot be checked, and it
 * would not run), beside every fault of the others.
 * @throws LockhostError CONFIG_INVALID naming each schedule at fault.
 */
async function checkSchedules(config: LockhostConfig, guests: ReadonlyMap<string, GuestInstance>): Promise<ScheduledConfig[]> {
  const file = config.source ?? "config";
  const problems: LockhostError[] = config.scheduled
    .filter((s) => !guests.has(s.plugin))
    .map(
      (s) =>
        new LockhostError(
          "CONFIG_INVALID",
          `${file}: [[scheduled]] "${s.id}": plugin ${s.plugin} did not load (its fault is above), so this schedule would not run and its ` +
            `export ${s.export === ALL_DECLARED ? "(every one it declares)" : s.export} is not checked`,
        ),
    );
  const loaded: LockhostConfig = { ...config, scheduled: config.scheduled.filter((s) => guests.has(s.plugin)) };
  let expanded: ScheduledConfig[] = [];
  try {
    expanded = await expandScheduled(loaded, guests);
    checkScheduledExports(loaded, guests, expanded);
  } catch (err) {
    const e = toLockhostError(err);
    // Several faults at once arrive as one error whose cause lists them.
    problems.push(...(e.cause instanceof AggregateError ? (e.cause.errors as LockhostError[]) : [e]));
  }
  if (problems.length > 0) throw allProblems(file, problems);
  return expanded;
}

/**
 * Runs the checks and prints the result; 0 when all is well, 2 when the backend's table is wrong
 * (a TLS file that cannot be read) or its server refuses this host for good (a wrong password, a
 * refused certificate, a Redis database the server does not have: `run` would exit 2 at start
 * too), else 1 when something is not.
 */
export async function check(config: LockhostConfig): Promise<number> {
  const findings: Finding[] = [];
  const quiet = pino({ level: "silent" });
  const attempt = async (what: string, step: () => Promise<void>): Promise<void> => {
    try {
      await step();
      findings.push({ what });
    } catch (err) {
      const e = toLockhostError(err);
      findings.push({ what, fault: { code: e.code, message: e.message } });
    }
  };

  // Guests are instantiated on a lock service of their own: checking takes no lock anywhere.
  const scratch = new LockService(await createBackend({ ...config.locking, backend: "memory" }, quiet), { node: config.host.node });
  const guests = new Map<string, GuestInstance>();
  // What would run: the schedules the plugins declare read from them, in place of the short entries.
  let schedules: ScheduledConfig[] | undefined;
  for (const plugin of config.plugins) {
    await attempt(`plugin ${plugin.name}: ${plugin.wasm} loads and instantiates in the ${plugin.runtime} runtime (ABI checked)`, async () => {
      // One instance tells whether the module loads; a pool's others are the same module.
      guests.set(plugin.name, await startPluginGuest({ ...plugin, instances: 1 }, scratch, quiet));
    });
  }
  if (config.scheduled.length > 0) {
    await attempt(`schedules: every export exists and takes no arguments`, async () => {
      schedules = await checkSchedules(config, guests);
    });
  }
  await Promise.all([...guests.values()].map((g) => g.close()));
  await scratch.close();

  let backendRefused = false;
  await attempt(`backend ${config.locking.backend} answers`, async () => {
    try {
      const locks = new LockService(await createBackend(config.locking, quiet, config.source), { node: config.host.node });
      try {
        await locks.ping();
      } finally {
        await locks.close();
      }
    } catch (err) {
      const e = toLockhostError(err);
      backendRefused = e.code === "CONFIG_INVALID" || isPermanent(e);
      if (!isPermanent(e)) throw e;
      // As run's start says it (host/backend-health.ts).
      throw new LockhostError(
        "CONFIG_INVALID",
        `[locking.${config.locking.backend}]: the ${config.locking.backend} backend refused this host for good, so retrying cannot help: ${e.message}`,
        { cause: e },
      );
    }
  });

  const faults = findings.filter((f) => f.fault);
  console.log(`${config.source ?? "config"}: ${faults.length === 0 ? "ok" : `${faults.length} fault(s)`}`);
  // A fault of several errors (every bad schedule) has a line each, kept under the FAIL.
  for (const f of findings)
    console.log(f.fault ? `  FAIL ${f.what}\n       ${f.fault.code}: ${f.fault.message.replace(/\n/g, "\n       ")}` : `  ok   ${f.what}`);
  if (faults.length === 0) {
    console.log("\nWould run:");
    const admin = config.admin && `http://${formatListen(config.admin.listen)}`;
    for (const line of summaryLines(config, [config.host.node], admin, schedules)) if (!line.includes("Ctrl-C")) console.log(`  ${line}`);
    for (const line of grantLines(config)) console.log(`  ${line}`);
  }
  return faults.length === 0 ? 0 : backendRefused ? 2 : 1;
}
