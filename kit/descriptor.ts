// What a backend package hands to lockhost: a descriptor — its name, the schema of its
// `[locking.<name>]` table, and a factory. The host knows backends only through this; the
// built-ins (memory, redis, pg) register through the same door a third-party package uses.
import type { Logger } from "pino";
import type { LockBackend } from "./backend.js";
import type { TableSchema } from "./schema.js";

/** What the host gives a backend factory besides its config. */
export interface BackendContext {
  /** A logger already carrying `{ backend: name }`. */
  readonly log: Logger;
  /** The config file the settings came from, for messages; absent for configs built in code. */
  readonly source?: string;
}

/** A backend as the registry knows it. `C` is its `[locking.<name>]` table after reading. */
export interface BackendDescriptor<C = unknown> {
  /** What `[locking] backend` names: lowercase letters, digits, '-' and '_'. */
  readonly name: string;
  /** One line for `--help` and the README. */
  readonly description: string;
  /** Whether several host processes share this backend's locks (schedules' prefer_global uses it). */
  readonly distributed: boolean;
  /** The schema of `[locking.<name>]`: validated at config load, defaults applied. */
  readonly config: TableSchema<C>;
  /**
   * Makes the backend. Connections open in the background: a backend that cannot reach its
   * server fails each call with BACKEND_UNAVAILABLE, never here. Heavy clients are imported
   * here (lazily), not at the descriptor's module load.
   */
  create(config: C, context: BackendContext): LockBackend | Promise<LockBackend>;
}

/** Declares a descriptor (a typed identity, so `C` is checked against the schema). */
export function defineBackend<C>(descriptor: BackendDescriptor<C>): BackendDescriptor<C> {
  return descriptor;
}

/**
 * The typed `[locking.<name>]` tables of the backends compiled into a program: each backend
 * package adds its own by declaration merging (`declare module "lockhost/backend" { interface
 * BackendConfigMap { redis: RedisConfig } }`), so `config.locking.redis` is typed wherever that
 * backend is imported. A backend that does not add itself still works; its table is `unknown`.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface BackendConfigMap {}
