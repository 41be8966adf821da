// The contract suites are written for vitest, an optional peer dependency; loadGuest runs under
// any test runner. So vitest is imported here, once, where it is installed, rather than by name
// in every suite: lockhost/testing loads without it (node:test), and a contract suite started
// without it says what to install.
import type * as Vitest from "vitest";

/** Stands in for vitest when it is not installed: any use says so. */
function missing(cause: unknown): typeof Vitest {
  const fail = (): never => {
    throw new Error(`lockhost/testing: the backend contract suites run under vitest, which could not be loaded (npm install --save-dev vitest): ${cause}`, {
      cause,
    });
  };
  const stub: object = new Proxy(() => undefined, { get: fail, apply: fail });
  // No `then`: it is awaited as the module would be, and must not pass for a promise.
  return new Proxy({}, { get: (_, name) => (name === "then" ? undefined : stub) }) as typeof Vitest;
}

// A vitest that is missing or fails to load says why where a suite uses it, not on import.
const vitest: typeof Vitest = await import("vitest").catch(missing);

export const { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } = vitest;
