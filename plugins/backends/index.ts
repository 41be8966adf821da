// Chooses the backend the operator configured. Each backend is one file (or small folder)
// behind LockBackend; this is the only place that knows them all.
import type { Logger } from "pino";
import { CONFIG_DEFAULTS } from "../../host/config/defaults.js";
import type { LockingConfig } from "../../host/config/types.js";
import type { LockBackend } from "../../kit/backend.js";
import { MemoryBackend } from "./memory/index.js";
import { PgBackend } from "./pg/index.js";
import { RedisBackend } from "./redis/index.js";

import { memoryBackend } from "./memory/descriptor.js";
import { pgBackend } from "./pg/descriptor.js";
import { redisBackend } from "./redis/descriptor.js";

/** The backends lockhost ships, as descriptors: registered by the composition roots exactly as a third-party backend package is. */
export const BUILTIN_BACKENDS = [memoryBackend, redisBackend, pgBackend] as const;

export { memoryBackend, pgBackend, redisBackend };

/** Backends this build can create. */
export const AVAILABLE_BACKENDS: readonly string[] = ["memory", "redis", "pg"];

/**
 * Creates the backend `[locking] backend` names. Connections are opened in the background:
 * a backend that cannot reach its server fails each call with BACKEND_UNAVAILABLE, never here.
 * @param source the config file (LockhostConfig.source), kept for messages.
 */
export function createBackend(config: LockingConfig, log: Logger, _source?: string): LockBackend {
  switch (config.backend) {
    case "memory":
      log.warn(
        { backend: "memory" },
        "memory backend: locks live in this process only and are NOT shared with other hosts; use redis or pg for a cluster",
      );
      return new MemoryBackend();
    case "redis":
      return new RedisBackend(config.redis ?? CONFIG_DEFAULTS.redis, log.child({ backend: "redis" }));
    case "pg":
      return new PgBackend(config.pg ?? CONFIG_DEFAULTS.pg, log.child({ backend: "pg" }));
  }
}

export { MemoryBackend } from "./memory/index.js";
export { PgBackend } from "./pg/index.js";
export { RedisBackend } from "./redis/index.js";
