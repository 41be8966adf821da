// Test guest for plugin-declared schedules: lockhost_schedules() answers a declaration the
// test can replace (declare), and the exports it names count their runs.
export { lockhost_abi_version, lockhost_alloc, lockhost_free } from "../../abi/assembly/index";

let declaration = "# every export of this plugin, when it runs\ntick 200ms\n\nnightly 0 3 * * *\n";
let ticks: i32 = 0;

/** What this plugin declares: one `<export> <schedule>` a line. */
export function lockhost_schedules(): string {
  return declaration;
}

/** Replaces the declaration (read by the host when it loads the plugin). */
export function declare(text: string): void {
  declaration = text;
}

export function tick(): void {
  ticks++;
  trace("tick " + ticks.toString());
}

export function nightly(): void {
  trace("nightly");
}

export function other(): void {
  trace("other");
}

export function tickCount(): i32 {
  return ticks;
}

/** Not a string: for the host's check of what lockhost_schedules-like exports return. */
export function notAString(): i32 {
  return 0x7ffffff0;
}
