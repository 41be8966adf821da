// The "sessions killed" fault of the fault suites: the server closes every client connection
// but the admin's own (Redis: normal and pub/sub clients; PostgreSQL: every client backend).

/** Closes every client connection to the Redis at `url`. */
export async function killRedisSessions(url: string): Promise<void> {
  const { Redis } = await import("ioredis");
  const admin = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  admin.on("error", () => undefined);
  try {
    await admin.connect();
    await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    await admin.call("CLIENT", "KILL", "TYPE", "pubsub");
  } finally {
    admin.disconnect();
  }
}

/** Ends every client session of the PostgreSQL at `url`. */
export async function killPgSessions(url: string): Promise<void> {
  const { default: pg } = await import("pg");
  const admin = new pg.Client({ connectionString: url });
  admin.on("error", () => undefined);
  try {
    await admin.connect();
    await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()");
  } finally {
    await admin.end();
  }
}
