// A listener that counts its calls, for tests of release notifications (KindSteps.watch, and a
// backend's own mutex watch).
import type { KindSteps, ReleaseWatch } from "../../kit/backend.js";

/** A counting listener. */
export interface CallCounter {
  readonly listener: () => void;
  readonly count: () => number;
  /**
   * Runs `action` and resolves with its result once the listener has also been called since
   * `action` began; rejects after `ms` without a call.
   */
  calledBy<T>(action: () => Promise<T>, ms?: number): Promise<T>;
}

/** A new counting listener (see CallCounter). */
export function callCounter(): CallCounter {
  let calls = 0;
  let waiting: (() => void) | undefined;
  const next = (ms: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no notification within ${ms} ms`)), ms);
      waiting = () => {
        clearTimeout(timer);
        waiting = undefined;
        resolve();
      };
    });
  return {
    listener: () => {
      calls++;
      waiting?.();
    },
    count: () => calls,
    calledBy: (action, ms = 5_000) => {
      const called = next(ms);
      return Promise.all([called, action()]).then(([, result]) => result);
    },
  };
}

/** A counting watch of `key` on `backend`, once it is ready. */
export async function watchCounting(backend: Pick<KindSteps, "watch">, key: string): Promise<CallCounter & { readonly watch: ReleaseWatch }> {
  const counter = callCounter();
  const watch = backend.watch(key, counter.listener);
  await watch.ready;
  return { ...counter, watch };
}
