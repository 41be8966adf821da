// The fault check (issue: fences that never step back, a holder that hears of every loss):
// three host processes with four worker guests each fight over three keys on a private Redis
// (no persistence) and a private PostgreSQL (synchronous commits, as in production), every
// section writing through a fenced register, while the server restarts, freezes and drops every
// session, and hosts freeze past their TTL or die and are replaced. It asserts no overlap that a
// fault does not explain, no fence issued below an earlier one, no register write refused to a
// holder that lived through no fault (none after the Redis restart), every lock of a killed host
// taken again, and every host still taking locks once the faults are over.
//
// `npm test` runs the short version: each fault once, in one run per backend, and once more
// with lock delegation on (host/locking/delegation.ts: the hosts hand keys between their own
// guests without a round trip). `npm run faults` (LOCKHOST_FAULTS=full) runs each fault three times
// in a run of its own, then all of them mixed, each with and without delegation.
import { afterAll, beforeAll, describe, it } from "vitest";
import { startPostgresServer, startRedisServer, type TestServer } from "../support/servers.js";
import { killPgSessions, killRedisSessions } from "../support/kill-sessions.js";
import { expectSafeAndLive, runFaults, type Fault, type FaultRunOptions } from "./fault-run.js";

const FULL = process.env.LOCKHOST_FAULTS === "full";
const TTL_MS = 1_000;
const SHAPE = { nodes: 3, guestsPerNode: 4, keys: 3, holdMs: 20, ttlMs: TTL_MS, gapMs: FULL ? 4_000 : 1_500 } as const;

/** Every kind of fault once, longer than a TTL where a freeze is concerned. */
const MIXED: readonly Fault[] = [
  { kind: "server-restart" },
  { kind: "host-pause", node: 2, forMs: 2.5 * TTL_MS },
  { kind: "sessions-killed" },
  { kind: "server-pause", forMs: 1.5 * TTL_MS },
  { kind: "host-kill", node: 3 },
];

/** The runs: the mixed one, and in the full suite each fault three times on its own first. */
const RUNS: ReadonlyArray<readonly [string, readonly Fault[]]> = [...(FULL ? MIXED.map((f) => [f.kind, [f, f, f]] as const) : []), ["mixed", MIXED]];

/**
 * With lock delegation on or off: the full suite runs every run both ways; the short one runs the
 * mixed run both ways (both backends here have delegation's steps).
 */
const modesOf = (name: string): readonly boolean[] => (FULL || name === "mixed" ? [false, true] : [false]);

function faultSuite(
  backend: "redis" | "pg",
  start: () => Promise<TestServer>,
  sessionKiller: (url: string) => () => Promise<void>,
  locking: (url: string) => FaultRunOptions["locking"],
): void {
  describe(`faults on ${backend === "redis" ? "Redis (no persistence)" : "PostgreSQL"}`, () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await start();
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
    }, 60_000);

    for (const [name, faults] of RUNS) {
      for (const delegated of modesOf(name)) {
        const what = `${name === "mixed" ? "every fault in turn" : `${name} ×${faults.length}`}${delegated ? ", with lock delegation" : ""}`;
        it(`keeps exclusion, fences and liveness through ${what}`, async () => {
          const base = locking(server.url);
          const r = await runFaults({
            ...SHAPE,
            server,
            locking: delegated ? { ...base, delegation: { enabled: true } } : base,
            killSessions: sessionKiller(server.url),
            faults,
          });
          expectSafeAndLive(`${backend} ${name}${delegated ? " delegated" : ""}`, r);
        }, 240_000);
      }
    }
  });
}

faultSuite(
  "redis",
  startRedisServer,
  (url) => () => killRedisSessions(url),
  (url) => ({ backend: "redis", redis: { url } }),
);

faultSuite(
  "pg",
  () => startPostgresServer({ durableCommits: true }),
  (url) => () => killPgSessions(url),
  (url) => ({ backend: "pg", pg: { url } }),
);
