// The fence scale of a key prefix (`[locking.etcd] fence_scale`): a fence is the revision of the
// write that granted the lock times the scale, plus a delegating host's local handoff index
// (delegation.ts), so a block of `scale` fences fits between one revision's fence and the next.
// Every host of a prefix must use the same scale, or a scaled fence and an unscaled one would be
// compared: the first host stores it at `<prefix>fence-scale`, and every host checks it at its
// start (ping) and before its first acquisition, refusing to run with another.
import { LockhostError } from "../../../kit/index.js";
import type { EtcdClient } from "./client.js";
import { CMP, TARGET } from "./proto.js";

/** The key under the prefix that holds the prefix's fence scale. */
export const FENCE_SCALE_KEY = "fence-scale";

export class FenceScale {
  /** Fences per revision: `[locking.etcd] fence_scale`. */
  readonly value: number;
  readonly #client: EtcdClient;
  readonly #key: string;
  readonly #prefix: string;
  #checked: Promise<void> | undefined;

  constructor(client: EtcdClient, prefix: string, value: number) {
    this.#client = client;
    this.#prefix = prefix;
    this.#key = `${prefix}${FENCE_SCALE_KEY}`;
    this.value = value;
  }

  /** The fence of a grant written at `revision`. */
  of(revision: string | number): number {
    return Number(revision) * this.value;
  }

  /**
   * Settles once the prefix's stored scale is known to be this host's (storing it when none is);
   * rejects with CONFIG_INVALID, naming the option, when it is another. A failed read is tried
   * again at the next call.
   */
  check(): Promise<void> {
    this.#checked ??= this.#check().catch((err: unknown) => {
      this.#checked = undefined;
      throw err;
    });
    return this.#checked;
  }

  async #check(): Promise<void> {
    const key = this.#key;
    const mine = String(this.value);
    const res = await this.#client.txn(
      {
        compare: [{ key, target: TARGET.VERSION, result: CMP.EQUAL, version: 0 }],
        success: [{ request_put: { key, value: mine } }],
        failure: [{ request_range: { key } }],
      },
      "the check of the fence scale",
    );
    if (res.succeeded) return;
    const stored = res.responses[0]?.response_range?.kvs[0]?.value.toString("utf8");
    if (stored === undefined || stored === mine) return;
    throw new LockhostError(
      "CONFIG_INVALID",
      `[locking.etcd] fence_scale is ${mine}, but the hosts of key prefix ${this.#prefix} use ${stored} (stored at ${key}): ` +
        "every host of a prefix must use the same (docs/backends.md#etcd-fence-scale says how to change it)",
      { details: { permanent: 1 } },
    );
  }
}
