// What a backend's test file hands the contract suites.
import type { LockBackend } from "../kit/backend.js";

/** How a backend test file provides its backend. */
export interface ContractTarget {
  /** Creates the backend under test (called once per file). */
  create(): Promise<LockBackend> | LockBackend;
  /** Frees what create() set up; the backend itself is closed by the suite. */
  dispose?(): Promise<void>;
  /**
   * How the backend numbers fences: "counter" (the default: one counter per key, starting at
   * the same value for every new key) or "clock" (from the server's clock, as Redis does so a
   * lost counter cannot make them step back: a later acquisition of any key gets a higher fence).
   */
  readonly fences?: "counter" | "clock";
  /**
   * Whether the backend serves the queue kinds (kit/kinds.ts QUEUE_KINDS: read/write locks,
   * semaphores, the fair mutex; see LockBackend.kinds), whose contract then runs too. Default true; a backend that
   * serves none of them says false. The contract checks this agrees with the backend's `kinds`.
   */
  readonly queueKinds?: boolean;
  /**
   * Whether the backend serves leader election (the kind "leader", with a proclaim step), whose
   * contract then runs too. Default true; a backend without elections says false. Checked
   * against the backend's `kinds` as queueKinds is.
   */
  readonly election?: boolean;
}

/**
 * The backends of `count` "hosts": separate instances (connections) of a distributed backend,
 * else one instance shared (an in-process backend is one host's).
 */
export async function hostBackends(target: ContractTarget, count: number): Promise<LockBackend[]> {
  const first = await target.create();
  const all = [first];
  for (let i = 1; i < count; i++) all.push(first.distributed ? await target.create() : first);
  return all;
}

/** Closes each backend of `backends` once. */
export async function closeBackends(backends: readonly LockBackend[]): Promise<void> {
  for (const backend of new Set(backends)) await backend.close();
}
