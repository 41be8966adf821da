// Leader election through the guest ABI (issue 24), with a real AssemblyScript guest
// (test/guests/leader.ts) on the memory backend, in every runtime this Node has: several guest
// instances campaign for one plugin's election as several callers would.
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { guestFixture } from "./support/guest-fixture.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { sleep } from "./support/until.js";
import { guestTraces } from "./support/log.js";

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime) => {
  const fx = guestFixture();
  const guest = async (): Promise<GuestInstance> => fx.track(await startGuest("leader", fx.locks, fx.log.logger, { runtime }));
  const call = async (g: GuestInstance, name: string, args: number[] = []): Promise<number> => Number(await g.call(name, args));
  const traces = (): string[] => guestTraces(fx.log);
  const leaderJson = (): Record<string, unknown> =>
    JSON.parse(
      traces()
        .filter((t) => t.startsWith("leader "))
        .at(-1)!
        .slice(7),
    ) as Record<string, unknown>;

  it("elects one guest, reads the leader and its value, proclaims, and hands over on resign with a higher term", async () => {
    const [a, b] = [await guest(), await guest()];
    expect(await call(a, "lead", [0, 1, 10_000])).toBeGreaterThan(0);
    expect(await call(b, "lead", [0, 2, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(b, "who")).toBe(0);
    const first = await call(a, "term", [0]);
    expect(leaderJson()).toMatchObject({ key: "main", held: true, value: "v1", term: first, plugin: "test" });
    expect(await call(a, "say", [0, 7])).toBe(0);
    await call(b, "who");
    expect(leaderJson()).toMatchObject({ value: "v7", term: first });
    const waiting = call(b, "leadWait", [0, 2, 10_000, 20_000]);
    await sleep(100);
    expect(await call(a, "stepDown", [0])).toBe(0);
    expect(await waiting).toBeGreaterThan(0);
    expect(await call(b, "term", [0])).toBeGreaterThan(first);
    await call(a, "who");
    expect(leaderJson()).toMatchObject({ held: true, value: "v2" });
    expect(await call(b, "leadWait", [1, 3, 10_000, 50])).toBe(-S.TIMEOUT);
    expect(await call(b, "stepDown", [0])).toBe(0);
    await call(a, "who");
    expect(leaderJson()).toEqual({ key: "main", held: false });
  });

  it("tells a leader its leadership was lost (on_lost, state, proclaim -LOST) when it is force-released", async () => {
    const a = await guest();
    expect(await call(a, "lead", [0, 1, 10_000])).toBeGreaterThan(0);
    expect(await fx.locks.forceRelease({ name: "test:main" }, { kind: "leader" })).toBe(1);
    const until = performance.now() + 2_000;
    while (!traces().some((t) => t.startsWith("lost ")) && performance.now() < until) {
      await call(a, "state", [0]);
      await sleep(10);
    }
    expect(traces().some((t) => t.startsWith("lost "))).toBe(true);
    expect(await call(a, "state", [0])).toBe(S.STATE_LOST);
    expect(await call(a, "say", [0, 2])).toBe(-S.LOST);
  });

  it("answers a second resign of one leadership with an error, not another release", async () => {
    const a = await guest();
    expect(await call(a, "lead", [0, 1, 10_000])).toBeGreaterThan(0);
    expect(await call(a, "stepDown", [0])).toBe(0);
    expect(await call(a, "stepDown", [0])).toBeLessThan(0);
  });
});
