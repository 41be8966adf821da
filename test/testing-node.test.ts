// lockhost/testing under node:test, as a plugin author without vitest runs it: the example
// plugins' tests of node/examples.test.mjs, run by `node --test` from the built package (npm test
// builds first), once as they are and once with vitest made impossible to find (vitest is an
// optional peer dependency: lockhost/testing loads without it, and only a contract suite needs it).
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const run = promisify(execFile);

/** `node [flags] --test test/node/examples.test.mjs`: its exit code and TAP summary. */
async function nodeTest(flags: readonly string[]): Promise<{ code: number; pass: number; fail: number; out: string }> {
  const args = [...flags, "--test", "--test-reporter=tap", "test/node/examples.test.mjs"];
  const r = await run(process.execPath, args, { cwd: root, timeout: 120_000 }).then(
    (ok) => ({ code: 0, out: ok.stdout + ok.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, out: `${err.stdout ?? ""}${err.stderr ?? ""}` }),
  );
  const count = (what: string): number => Number(new RegExp(`^# ${what} (\\d+)$`, "m").exec(r.out)?.[1] ?? -1);
  return { ...r, pass: count("pass"), fail: count("fail") };
}

describe("lockhost/testing under node:test", () => {
  it("runs the example plugins' tests", async () => {
    const r = await nodeTest([]);
    expect({ code: r.code, pass: r.pass, fail: r.fail }, r.out).toEqual({ code: 0, pass: 3, fail: 0 });
  });

  it("runs them without vitest installed; a contract suite then says what to install", async () => {
    const without = ["--import", "./test/node/without-vitest.mjs"];
    const r = await nodeTest(without);
    expect({ code: r.code, pass: r.pass, fail: r.fail }, r.out).toEqual({ code: 0, pass: 3, fail: 0 });
    const script = 'const { backendContract } = await import("lockhost/testing"); backendContract("x", { create: () => ({}) });';
    const contract = await run(process.execPath, [...without, "--input-type=module", "-e", script], { cwd: root }).catch((err: { stderr: string }) => err);
    expect("stderr" in contract ? contract.stderr : "").toContain(
      "the backend contract suites run under vitest, which could not be loaded (npm install --save-dev vitest)",
    );
  });
});
