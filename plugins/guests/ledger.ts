// Example plugin: fencing tokens.
//
// A lock alone cannot stop a holder that paused (GC, network stall) past its
// lease from writing after someone else took over. Fencing can: every
// acquisition gets a token that strictly increases per key, the writer sends it
// with each write, and the protected resource rejects any token lower than or
// equal to the highest it has accepted.
//
// In production the resource lives elsewhere (a database row, a storage
// service) and performs that check itself, atomically with the write. Here a
// tiny in-guest Ledger plays that role so the example is self-contained.

import { tryLock, GLOBAL } from "lockhost";

// Required in every guest: the host checks the ABI version before loading it.
export { lockhost_abi_version } from "lockhost";

/** A resource that accepts a write only with a fence newer than any it has seen. */
class Ledger {
  lastFence: i64 = 0;
  balance: i64 = 0;

  /** Applies `amount` if `fence` is newer than the last accepted one. */
  write(fence: i64, amount: i64): bool {
    if (fence <= this.lastFence) {
      trace("ledger: rejected stale fence " + fence.toString() + " (last accepted " + this.lastFence.toString() + ")");
      return false;
    }
    this.lastFence = fence;
    this.balance += amount;
    trace("ledger: accepted write with fence " + fence.toString() + ", balance " + this.balance.toString());
    return true;
  }
}

const ledger = new Ledger();

/** Takes the global lock "ledger", writes with its fence, then shows a stale write being rejected. */
export function run(): void {
  const r = tryLock("ledger", 10_000, GLOBAL);
  const lock = r.lock;
  if (!lock) {
    if (r.contended) trace("ledger: lock busy, another writer has it");
    else trace("ledger: could not take the lock: " + r.error!.toString());
    return;
  }

  const fence = lock.fence();
  if (fence <= 0) {
    trace("ledger: no fencing token (code " + (-fence).toString() + ")");
  } else {
    ledger.write(fence, 100); // the current holder: accepted
    ledger.write(fence - 1, 999); // what a paused, earlier holder would send: rejected
  }

  const err = lock.release();
  if (err) trace("ledger: release failed: " + err.toString());
}
