// Example plugin: a fenced write to a real resource.
//
// A lock alone cannot stop a holder that paused (GC, network stall) past its
// lease from writing after someone else took over. Fencing can: every
// acquisition gets a token that strictly increases per key, the write carries
// it, and the resource refuses any token not above the highest it has accepted.
//
// Here the resource is the example ledger service (examples/ledger-service.ts,
// started by `npm start`), which checks fences with lockhost/fence. The guest
// takes the global lock "ledger" and POSTs an entry through the host's http
// capability with FLAG_FENCE: the host adds `lockhost-lock: global:ledger` and
// `lockhost-fence: <fence>`, which the guest cannot forge. A write whose fence
// is stale (a newer holder already wrote) comes back 409.

import { tryLock, GLOBAL, configValue, httpRequest, log } from "lockhost";

// Required in every guest: the host checks the ABI version before loading it.
export { lockhost_abi_version } from "lockhost";

/** Takes the global lock "ledger" and writes an entry of 100 under its fence. */
export function run(): void {
  const url = configValue("ledger_url");
  if (url === null) {
    log.error("ledger: no ledger_url in [plugins.config]");
    return;
  }
  const r = tryLock("ledger", 10_000, GLOBAL);
  const lock = r.lock;
  if (!lock) {
    if (r.contended) log.info("ledger: lock busy, another writer has it");
    else log.warn("ledger: could not take the lock: " + r.error!.toString());
    return;
  }
  const fence = lock.fence();
  const res = httpRequest("POST", url + "/entries", ["content-type: application/json"], String.UTF8.encode('{"amount":100}'), lock);
  if (res.error) log.warn("ledger: write failed: " + res.error!.toString());
  else if (res.status == 409) log.warn("ledger: write refused, stale fence " + fence.toString() + ": " + res.text());
  else log.info("ledger: write accepted with fence " + fence.toString() + ": " + res.text());
  lock.release();
}
