// Chooses the backend the operator configured. Each backend is one file behind LockBackend;
// this is the only place that knows them all.
import type { Logger } from "pino";
import type { LockingConfig } from "../../host/config/types.js";
import { LockhostError } from "../../host/errors.js";
import type { LockBackend } from "../../host/locking/backend.js";
import { MemoryBackend } from "./memory.js";

/** Backends this build can create. */
export const AVAILABLE_BACKENDS: readonly string[] = ["memory"];

/**
 * Creates the backend `[locking] backend` names; CONFIG_INVALID for one not available yet.
 * @param source the config file (LockhostConfig.source), named in that error; default "config".
 */
export function createBackend(config: LockingConfig, log: Logger, source?: string): LockBackend {
  switch (config.backend) {
    case "memory":
      log.warn(
        { backend: "memory" },
        "memory backend: locks live in this process only and are NOT shared with other hosts; use redis or pg for a cluster",
      );
      return new MemoryBackend();
    default:
      throw new LockhostError(
        "CONFIG_INVALID",
        `${source ?? "config"}: [locking] backend = "${config.backend}" is not available in this version of lockhost yet (available: ${AVAILABLE_BACKENDS.join(", ")})`,
      );
  }
}

export { MemoryBackend } from "./memory.js";
