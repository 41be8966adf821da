// The memory backend as the registry knows it: the embedded default, for development and
// single-node use. It has no settings.
import { defineBackend } from "../../../kit/index.js";
import { memoryConfigSchema, type MemoryConfig } from "./config.js";

/** `backend = "memory"`: locks in this process only. */
export const memoryBackend = defineBackend<MemoryConfig>({
  name: "memory",
  description: "in-process map, for development and single-node use: NOT shared between processes",
  distributed: false,
  config: memoryConfigSchema,
  async create(_config, { log }) {
    log.warn("memory backend: locks live in this process only and are NOT shared with other hosts; use redis or pg for a cluster");
    const { MemoryBackend } = await import("./index.js");
    return new MemoryBackend();
  },
});
