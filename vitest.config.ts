import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Redis and PostgreSQL must answer (or be started privately) before any test runs.
    globalSetup: ["test/support/global-setup.ts"],
    // The composition roots register the built-in backends; test files import host modules directly.
    setupFiles: ["test/support/register-backends.ts"],
    // Guests run in real worker threads and some tests wait on real time limits.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Unhandled rejections fail the run (vitest's default); say it here so nobody turns it off.
    dangerouslyIgnoreUnhandledErrors: false,
    // The CLI's notice on a Node older than 22 (CI runs the machine's Node 20) would be every
    // spawned command's first stderr line; test/cli.test.ts checks the notice itself.
    env: { LOCKHOST_NODE_NOTICE: "0" },
  },
});
