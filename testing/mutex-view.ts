// The contract's view of a single-holder kind's steps (the mutex, a leader): the one interface
// (kit/steps.ts) read back as one record per name, so the cases read as what they check (a
// holder's owner, a fence) rather than as holders[0] each time.
import type { RenewResult } from "../kit/common.js";
import type { KindSteps, AcquireResult } from "../kit/steps.js";
import type { MutexAcquireRequest, MutexStore } from "../kit/mutex.js";

/** A single-holder kind's steps, one record per name: a MutexStore's shape, plus a single renew. */
export interface SingleView extends Omit<MutexStore, "acquire" | "proclaim"> {
  acquire(req: MutexAcquireRequest): Promise<AcquireResult>;
  renew(name: string, owner: string, ttlMs: number): Promise<RenewResult>;
  proclaim(name: string, owner: string, value: string): Promise<boolean>;
}

/** `steps` (of a kind with one exclusive holder) as a SingleView. */
export function singleView(steps: KindSteps): SingleView {
  return {
    acquire: (req) => steps.acquire({ ...req, mode: "exclusive", limit: 0, queueMs: 0 }),
    renew: async (name, owner, ttlMs) => (await steps.renewMany([{ name, owner, ttlMs }]))[0]!,
    renewMany: (reqs) => steps.renewMany(reqs),
    release: (name, owner) => steps.release(name, owner),
    status: async (name) => {
      const record = await steps.status(name);
      if (record !== null && record.holders.length > 1) throw new Error(`${steps.kind} ${name} has ${record.holders.length} holders`);
      const one = record?.holders[0];
      return one === undefined ? null : { name: record!.name, ...withoutMode(one) };
    },
    forceRelease: async (name) => (await steps.forceRelease(name)) > 0,
    list: async (req) => {
      const page = await steps.list(req);
      const locks = page.records.flatMap((r) => r.holders.map((h) => ({ name: r.name, ...withoutMode(h) })));
      return page.cursor === undefined ? { locks } : { locks, cursor: page.cursor };
    },
    watch: (name, listener) => steps.watch(name, listener),
    proclaim: (name, owner, value) => {
      if (typeof steps.proclaim !== "function") throw new Error(`the ${steps.kind} steps have no proclaim`);
      return steps.proclaim(name, owner, value);
    },
  };
}

function withoutMode<T extends { readonly mode: unknown }>({ mode, ...rest }: T): Omit<T, "mode"> {
  if (mode !== "exclusive") throw new Error(`a single-holder kind's holder has mode ${String(mode)}`);
  return rest;
}
