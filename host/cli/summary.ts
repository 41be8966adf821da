// What `lockhost run` says first: one screen with the backend, the nodes, each plugin with the
// runtime it got, each schedule, and the admin URL. In JSON the same facts as fields of one line.
import type { Logger } from "pino";
import { maskUrl } from "../../kit/redact.js";
import type { LockhostConfig, ScheduledConfig } from "../config/types.js";
import type { Host } from "../host.js";

/** The backend's table's url, redacted, when it has one. */
function backendTarget(config: LockhostConfig): string | undefined {
  const table = (config.locking as unknown as Record<string, unknown>)[config.locking.backend] as { url?: unknown } | undefined;
  return typeof table?.url === "string" ? maskUrl(table.url) : undefined;
}

/**
 * The facts of a summary. `schedules`: what runs, with the schedules the plugins declare in
 * place of the short entries (a host's, or what check read from the guests); the config's own
 * list otherwise.
 */
function factsOf(config: LockhostConfig, schedules: readonly ScheduledConfig[] = config.scheduled) {
  const target = backendTarget(config);
  return {
    backend: `${config.locking.backend}${target ? ` at ${target}` : ""}`,
    plugins: config.plugins.map((p) => ({
      name: p.name,
      runtime: p.runtime,
      memoryLimitMib: p.memoryLimitMib,
      ...(p.runtime === "worker" && { callTimeoutMs: p.callTimeoutMs }),
      ...(p.instances > 1 && { instances: p.instances }),
    })),
    schedules: schedules.map((s) => ({
      id: s.id,
      every: s.schedule.kind === "interval" ? s.schedule.text : s.schedule.kind === "cron" ? s.schedule.expression : "declared by the plugin",
      hint: s.hint,
    })),
  };
}

/** Logs the summary of `hosts` (one per node) running `config`. */
export function logSummary(log: Logger, config: LockhostConfig, hosts: readonly Host[], pretty: boolean): void {
  const nodes = hosts.map((h) => h.config.host.node);
  const admin = hosts.find((h) => h.admin)?.admin?.url;
  if (!pretty) {
    const { backend, plugins, schedules } = factsOf(config, hosts[0]?.schedules);
    log.info({ backend, nodes, plugins, schedules, ...(admin && { admin, dashboard: `${admin}/` }) }, "lockhost running");
    return;
  }
  const lines = summaryLines(config, nodes, admin, hosts[0]?.schedules);
  log.info(["lockhost running: " + lines[0], ...lines.slice(1)].join("\n"));
}

/**
 * The summary as lines of text: nodes and backend first, then plugins, schedules (`schedules`,
 * as factsOf takes them), admin.
 */
export function summaryLines(config: LockhostConfig, nodes: readonly string[], admin: string | undefined, schedules?: readonly ScheduledConfig[]): string[] {
  const { backend, plugins, schedules: shown } = factsOf(config, schedules);
  return [
    `${nodes.length === 1 ? `node ${nodes[0]}` : `${nodes.length} nodes (${nodes.join(", ")})`}, backend ${backend}`,
    ...(plugins.length === 0
      ? ["  plugins:   none (idle)"]
      : plugins.map(
          (p, i) =>
            `  ${i === 0 ? "plugins:  " : "          "} ${p.name}  ${p.runtime} runtime, ${p.memoryLimitMib} ` +
            `MiB${p.callTimeoutMs !== undefined ? `, ${p.callTimeoutMs} ms per call` : ", no time limit"}` +
            (p.instances !== undefined ? `, ${p.instances} instances (one call each at a time; up to ${p.instances * p.memoryLimitMib} MiB in all)` : ""),
        )),
    ...(shown.length === 0 ? ["  schedules: none"] : shown.map((s, i) => `  ${i === 0 ? "schedules:" : "          "} ${s.id}  every ${s.every}, ${s.hint}`)),
    `  admin:     ${admin ? `${admin}  (dashboard: ${admin}/)` : "off (add an [admin] table for status, metrics and the dashboard)"}`,
    "  Ctrl-C stops: no new ticks, waits cancelled, running calls finish, every lock released.",
  ];
}
