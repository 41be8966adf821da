// A backend whose server is unreachable: every step fails the way a real backend reports an
// outage. Used to test the callers' error paths; the real-server fault tests belong to the
// Redis and PostgreSQL backends.
import { LockhostError } from "../../kit/errors.js";
import type { KindSteps, LockBackend } from "../../kit/backend.js";

const down = (): Promise<never> => Promise.reject(new LockhostError("BACKEND_UNAVAILABLE", "backend unreachable (test)"));

/** The mutex's steps on a server that is down. */
const downSteps: KindSteps = {
  kind: "mutex",
  acquire: down,
  renewMany: down,
  release: down,
  leaveQueue: down,
  // Nothing can be subscribed to: waiters fall back to polling.
  watch: () => ({ ready: Promise.resolve(), close: () => undefined }),
  status: down,
  forceRelease: down,
  list: down,
};

/** A LockBackend (of mutexes) that is always down. */
export function unreachableBackend(): LockBackend {
  return {
    name: "unreachable",
    distributed: true,
    kinds: ["mutex"],
    steps: () => downSteps,
    ping: down,
    close: () => Promise.resolve(),
  };
}
