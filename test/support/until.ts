// Waiting in tests: a pause, and polling for a condition in tests that watch another process or
// server act.

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 10 ms until it returns true, failing with `what` after `ms`. */
export async function until(what: string, ms: number, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(10);
  }
}
