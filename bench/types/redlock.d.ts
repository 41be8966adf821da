// node-redlock 4 ships no types; the part the bench uses.
declare module "redlock" {
  interface RedlockLock {
    unlock(): Promise<void>;
  }
  interface RedlockOptions {
    driftFactor?: number;
    retryCount?: number;
    retryDelay?: number;
    retryJitter?: number;
  }
  class Redlock {
    constructor(clients: readonly unknown[], options?: RedlockOptions);
    lock(resource: string, ttlMs: number): Promise<RedlockLock>;
    on(event: "clientError", listener: (err: unknown) => void): this;
  }
  export default Redlock;
}
