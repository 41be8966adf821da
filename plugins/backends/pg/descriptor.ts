// The pg backend as the registry knows it. node-postgres is imported only when a host creates
// this backend, so a host on another backend never loads it.
import { defineBackend } from "../../../kit/index.js";
import { pgConfigSchema, type PgConfig } from "./config.js";

/** `backend = "pg"`: advisory locks in PostgreSQL, shared by every host on the database. */
export const pgBackend = defineBackend<PgConfig>({
  name: "pg",
  description: "PostgreSQL (node-postgres): session advisory locks, flushed fences, LISTEN/NOTIFY wake-ups",
  distributed: true,
  config: pgConfigSchema,
  async create(config, { log }) {
    const { PgBackend } = await import("./index.js");
    return new PgBackend(config, log);
  },
});
