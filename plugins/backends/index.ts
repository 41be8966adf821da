// The backends lockhost ships, as descriptors. Importing this loads no client library: each
// descriptor imports its backend (and ioredis, pg or the gRPC client) only when a host creates it.
import { etcdBackend } from "./etcd/descriptor.js";
import { memoryBackend } from "./memory/descriptor.js";
import { pgBackend } from "./pg/descriptor.js";
import { redisBackend } from "./redis/descriptor.js";

/** The built-in backends, registered by the composition roots exactly as a third-party backend package is. */
export const BUILTIN_BACKENDS = [memoryBackend, redisBackend, pgBackend, etcdBackend] as const;

export { etcdBackend, memoryBackend, pgBackend, redisBackend };
export { MemoryBackend, type MemoryBackendOptions } from "./memory/index.js";
