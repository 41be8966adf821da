// Schedules a plugin declares itself. A guest exports `lockhost_schedules(): string` (an
// AssemblyScript string) or `lockhost_schedules_utf8() -> i64` (UTF-8 `len << 32 | ptr`, what a
// Rust or C guest returns; string-results.ts reads both), one schedule a line, `<export> <interval or cron expression>` (blank lines and '#' comments
// ignored); a short [[scheduled]] entry (plugin, maybe export, no schedule) runs what it
// declares. Read once per plugin when the host loads it, turned into ordinary schedules here,
// so the scheduler only ever sees schedules with a clock.
//
// Precedence: an entry that spells its schedule in the TOML wins for its export: a short entry
// for every export ("*") leaves that export out, and the declaration is not read for it. A
// plugin's declaration runs nothing until a [[scheduled]] entry names the plugin.
import { Cron } from "croner";
import { parseDuration } from "../config/duration.js";
import { ALL_DECLARED } from "../config/schema.js";
import type { LockhostConfig, ScheduledConfig, ScheduleSpec } from "../config/types.js";
import { didYouMean } from "../suggest.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { GuestInstance } from "../runtime/guest-instance.js";

/** The export a guest declares its schedules with: `() -> string` (AssemblyScript). */
export const SCHEDULES_EXPORT = "lockhost_schedules";
/** The same as UTF-8, `() -> i64` (`len << 32 | ptr`): a Rust or C guest's. Read first when a guest has both. */
export const SCHEDULES_UTF8_EXPORT = "lockhost_schedules_utf8";
/** The most schedules one plugin may declare. */
export const MAX_DECLARED_SCHEDULES = 256;

/** One line of a declaration. */
export interface DeclaredSchedule {
  readonly export: string;
  readonly schedule: ScheduleSpec;
  /** The line it was read from (1-based), for messages. */
  readonly line: number;
}

const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$.]*$/;

/**
 * Reads a declaration (`declaredBy`: the export it came from, for messages); throws
 * CONFIG_INVALID naming `where` (the plugin) and the line at fault.
 */
export function parseDeclaredSchedules(text: string, where: string, declaredBy: string = SCHEDULES_EXPORT): DeclaredSchedule[] {
  const out: DeclaredSchedule[] = [];
  const seen = new Map<string, number>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const body = raw.trim();
    if (body === "" || body.startsWith("#")) return;
    const fail = (why: string): never => {
      throw new LockhostError("CONFIG_INVALID", `${where}: ${declaredBy}() line ${line} ${why}, got ${JSON.stringify(body)}`);
    };
    const space = body.search(/\s/);
    if (space < 0) fail(`must be "<export> <schedule>" (an interval such as 5m, or a cron expression)`);
    const exportName = body.slice(0, space);
    const when = body.slice(space).trim();
    if (!EXPORT_NAME.test(exportName)) fail(`names no export: "${exportName}" is not an export name`);
    const before = seen.get(exportName);
    if (before !== undefined) fail(`declares export ${exportName} again (first on line ${before}); one schedule per export`);
    seen.set(exportName, line);
    const schedule = scheduleOf(when);
    if (typeof schedule === "string") fail(schedule);
    out.push({ export: exportName, schedule: schedule as ScheduleSpec, line });
    if (out.length > MAX_DECLARED_SCHEDULES) fail(`is one schedule too many: at most ${MAX_DECLARED_SCHEDULES}`);
  });
  return out;
}

/** An interval or a cron expression of 5 or 6 fields, or why not. */
function scheduleOf(text: string): ScheduleSpec | string {
  const everyMs = parseDuration(text);
  if (everyMs !== undefined) return { kind: "interval", everyMs, text };
  const fields = text.split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `has a schedule that is neither an interval ("500ms", "5s", "1m", "2h") nor a cron expression of 5 or 6 fields`;
  let job: Cron;
  try {
    job = new Cron(text, { paused: true, mode: "5-or-6-parts" });
  } catch (err) {
    return `has an invalid cron expression (${err instanceof Error ? err.message.replace(/^CronPattern: /, "") : String(err)})`;
  }
  try {
    if (job.nextRun() === null) return "has a cron expression that never fires";
  } finally {
    job.stop();
  }
  return { kind: "cron", expression: text };
}

/**
 * The config's schedules with every short entry replaced by what its plugin declares (read from
 * the running guests, or from `declarations`). Throws CONFIG_INVALID naming the file, the entry and the plugin: a plugin
 * without the export, a declaration that does not read, an export it does not declare, or an id
 * used twice.
 */
export async function expandScheduled(
  config: LockhostConfig,
  guests: ReadonlyMap<string, GuestInstance>,
  /** Declarations read already, by plugin (a reload passes those of the plugins it keeps, and is given the rest). */
  declarations: Map<string, DeclaredSchedule[]> = new Map(),
): Promise<ScheduledConfig[]> {
  if (!config.scheduled.some((s) => s.schedule.kind === "declared")) return [...config.scheduled];
  const file = config.source ?? "config";
  const declarationOf = async (entry: ScheduledConfig): Promise<DeclaredSchedule[]> => {
    const known = declarations.get(entry.plugin);
    if (known) return known;
    const where = `${file}: [[scheduled]] "${entry.id}": plugin ${entry.plugin}`;
    const guest = guests.get(entry.plugin);
    const exportName = [SCHEDULES_UTF8_EXPORT, SCHEDULES_EXPORT].find((n) => guest?.hasExport(n));
    if (!guest || !exportName) {
      throw new LockhostError(
        "CONFIG_INVALID",
        `${where} declares no schedules (it does not export ${SCHEDULES_EXPORT}(): string or ${SCHEDULES_UTF8_EXPORT}() -> i64); spell export and ` +
          `schedule in the entry`,
      );
    }
    let text: string;
    try {
      text = await guest.callString(exportName);
    } catch (err) {
      const e = toLockhostError(err);
      throw new LockhostError("CONFIG_INVALID", `${where}: its ${exportName}() failed: ${e.code}: ${e.message}`, { cause: err });
    }
    const declared = parseDeclaredSchedules(text, where, exportName);
    declarations.set(entry.plugin, declared);
    return declared;
  };

  // Exports whose schedule an entry spells, or names, per plugin: a "*" entry leaves them out.
  const named = new Set(config.scheduled.filter((s) => s.export !== ALL_DECLARED).map((s) => `${s.plugin}\u0000${s.export}`));
  const out: ScheduledConfig[] = [];
  for (const entry of config.scheduled) {
    if (entry.schedule.kind !== "declared") {
      out.push(entry);
      continue;
    }
    const declared = await declarationOf(entry);
    if (entry.export !== ALL_DECLARED) {
      const line = declared.find((d) => d.export === entry.export);
      if (!line) {
        throw new LockhostError(
          "CONFIG_INVALID",
          `${file}: [[scheduled]] "${entry.id}": plugin ${entry.plugin} declares no schedule for export ${entry.export} (${didYouMean(
            entry.export,
            declared.map((d) => d.export),
          )}it declares: ${declared.map((d) => d.export).join(", ") || "none"}); spell schedule in the entry`,
        );
      }
      out.push({ ...entry, schedule: line.schedule });
      continue;
    }
    // A derived id (the plugin's name) gives each export the id a spelled entry would have.
    for (const d of declared) {
      if (named.has(`${entry.plugin}\u0000${d.export}`)) continue;
      out.push({ ...entry, id: `${entry.id}.${d.export}`, export: d.export, schedule: d.schedule });
    }
  }
  const ids = new Set<string>();
  for (const s of out) {
    if (ids.has(s.id))
      throw new LockhostError(
        "CONFIG_INVALID",
        `${file}: [[scheduled]] id "${s.id}" is used twice once plugin ${s.plugin}'s declared schedules are added; give the entries distinct ids`,
      );
    ids.add(s.id);
  }
  return out.map((s) => Object.freeze(s));
}
