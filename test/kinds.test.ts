// The kind table (kit/kinds.ts) against the tables it names: every ABI operation that takes a
// lock belongs to exactly one kind and mode, every status flag is the lock.status operation's,
// and the one validity check of a kind argument says what it may be.
import { describe, expect, it } from "vitest";
import { OPS, type OpSpec } from "../abi/ops.js";
import * as S from "../abi/status.js";
import {
  checkKind,
  ELECTION,
  FAIR,
  flaggedSpec,
  isQueueKind,
  KINDS,
  LOCK_KINDS,
  limitOf,
  modeOf,
  MUTEX,
  permitSpec,
  READ,
  roleOf,
  QUEUE_KINDS,
  SPEC_KINDS,
  WRITE,
} from "../kit/kinds.js";
import { MAX_PERMITS } from "../kit/steps.js";
import { isCode } from "../kit/errors.js";

describe("the kind table", () => {
  it("names each lock-taking ABI operation, with the flag that picks a kind on it, under exactly one kind and mode (leader election's too)", () => {
    const entries = LOCK_KINDS.flatMap((kind) => Object.values(KINDS[kind].ops).flatMap((o) => [o.try, o.acquire].map((op) => ({ op, flag: o.flag ?? 0 }))));
    const named = entries.map((e) => `${e.op}/${e.flag}`);
    expect(new Set(named).size).toBe(named.length);
    const taking = (OPS as readonly OpSpec[]).filter((op) => op.takesLock === true).map((op) => op.name);
    // Every operation that hands out a new lease says so (restore adopts one, it takes none).
    const handing = (OPS as readonly OpSpec[])
      .filter((op) => op.module === "lock" && op.args.includes("ttl") && op.name !== "restore" && op.name !== "renew" && op.name !== "proclaim")
      .map((op) => op.name);
    expect([...handing].sort()).toEqual([...taking].sort());
    expect([...new Set(entries.map((e) => e.op))].sort()).toEqual([...taking].sort());
    // Leader election's operations are its row's.
    expect(KINDS[ELECTION].ops).toEqual({ exclusive: { try: "try_campaign", acquire: "campaign" } });
    // A flag that picks a kind is one its operation accepts, and picks it there (flaggedSpec).
    for (const e of entries.filter((x) => x.flag !== 0)) expect(OPS.find((op) => op.name === e.op)!.flags & e.flag).toBe(e.flag);
    expect(flaggedSpec(MUTEX, S.FLAG_FAIR | S.FLAG_KEEP)).toEqual(FAIR);
    expect(flaggedSpec(MUTEX, S.FLAG_KEEP)).toBe(MUTEX);
    expect(flaggedSpec(WRITE, S.FLAG_FAIR)).toBe(WRITE);
  });

  it("offers every mode it lists, and has an ABI operation pair for each", () => {
    for (const kind of LOCK_KINDS) {
      const row = KINDS[kind];
      expect(Object.keys(row.ops).sort()).toEqual([...row.modes].sort());
      for (const mode of row.modes) expect(roleOf(kind, mode)).not.toBe(mode);
    }
  });

  it("gives each kind but the default a distinct lock.status flag, named as abi/status.ts names it", () => {
    const status = OPS.find((op) => op.name === "status")!;
    expect(LOCK_KINDS.filter((kind) => KINDS[kind].isDefault)).toEqual([MUTEX.kind]);
    const flags = QUEUE_KINDS.map((kind) => KINDS[kind].statusFlag);
    expect(new Set(flags).size).toBe(flags.length);
    for (const kind of QUEUE_KINDS) {
      const row = KINDS[kind];
      expect(row.statusFlag & status.flags).toBe(row.statusFlag);
      expect((S as Record<string, unknown>)[row.statusFlagName]).toBe(row.statusFlag);
    }
    expect(KINDS[MUTEX.kind].statusFlag).toBe(0);
    // Who leads an election is read through its own operation (lock.leader), not lock.status.
    expect(KINDS[ELECTION].statusFlag).toBe(0);
  });

  it("has one electing row, leader election's, which no spec names, stored as one record per key in a namespace of its own", () => {
    expect(LOCK_KINDS.filter((kind) => KINDS[kind].elects)).toEqual([ELECTION]);
    expect(SPEC_KINDS).toEqual(LOCK_KINDS.filter((kind) => kind !== ELECTION));
    expect(QUEUE_KINDS).toEqual(LOCK_KINDS.filter((kind) => KINDS[kind].store === "queue"));
    expect(LOCK_KINDS.filter((kind) => !isQueueKind(kind))).toEqual([MUTEX.kind, ELECTION]);
    // The mutex's names stand alone; the leader's start with a control character, which no lock name can.
    expect(KINDS[MUTEX.kind].namespace).toBe("");
    expect(KINDS[ELECTION].namespace).toBe("\u0001leader:");
    for (const kind of QUEUE_KINDS) expect(KINDS[kind].namespace).toBe("");
  });

  it("derives each spec's mode and limit from its row", () => {
    expect([modeOf(MUTEX), modeOf(READ), modeOf(WRITE), modeOf(permitSpec(3))]).toEqual(["exclusive", "shared", "exclusive", "shared"]);
    expect([limitOf(MUTEX), limitOf(READ), limitOf(permitSpec(3))]).toEqual([0, 0, 3]);
    expect(KINDS[permitSpec(1).kind].limit).toEqual({ field: "permits", min: 1, max: MAX_PERMITS });
  });

  it("checks a kind argument in one place, naming the kinds it may be", () => {
    expect(checkKind("rw", QUEUE_KINDS)).toBe("rw");
    expect(checkKind("mutex", LOCK_KINDS)).toBe("mutex");
    for (const bad of ["mutex", "toString", "", 3, undefined]) {
      let err: unknown;
      try {
        checkKind(bad, QUEUE_KINDS, "--kind");
      } catch (e) {
        err = e;
      }
      expect(isCode(err, "INVALID_ARGUMENT")).toBe(true);
      expect((err as Error).message).toMatch(/^--kind must be rw, semaphore or fair, got /);
    }
    expect(() => checkKind("lock", LOCK_KINDS)).toThrow('kind must be mutex, rw, semaphore, fair or leader, got "lock"');
    expect(() => checkKind("leader", SPEC_KINDS)).toThrow('kind must be mutex, rw, semaphore or fair, got "leader"');
  });
});
