// The redis backend as the registry knows it. ioredis is imported only when a host creates
// this backend, so a host on another backend never loads it.
import { defineBackend } from "../../../kit/index.js";
import { redisConfigSchema, type RedisConfig } from "./config.js";

/** `backend = "redis"`: locks in Redis or a Redis Cluster, shared by every host on it. */
export const redisBackend = defineBackend<RedisConfig>({
  name: "redis",
  description: "Redis or Redis Cluster (ioredis): Lua scripts, fences from the server, pub/sub wake-ups",
  distributed: true,
  config: redisConfigSchema,
  async create(config, { log }) {
    const { RedisBackend } = await import("./index.js");
    return new RedisBackend(config, log);
  },
});
