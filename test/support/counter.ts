// A listener that counts its calls, for tests of release notifications (LockBackend.watch).

/** A counting listener; `next()` resolves at its next call, or rejects after `ms`. */
export interface CallCounter {
  readonly listener: () => void;
  readonly count: () => number;
  next(ms?: number): Promise<void>;
}

/** A new counting listener (see CallCounter). */
export function callCounter(): CallCounter {
  let calls = 0;
  let waiting: (() => void) | undefined;
  return {
    listener: () => {
      calls++;
      waiting?.();
    },
    count: () => calls,
    next: (ms = 5_000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no notification within ${ms} ms`)), ms);
        waiting = () => {
          clearTimeout(timer);
          waiting = undefined;
          resolve();
        };
      }),
  };
}
