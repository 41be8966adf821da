// vitest global setup: makes sure the Redis and PostgreSQL the tests share are answering.
// REDIS_URL / DATABASE_URL (or the loopback defaults) are used when they answer; otherwise a
// private server is started from the binaries on PATH for this run, and the URLs point at it.
// When even those binaries are missing the run stops here, saying what to install: `npm test`
// never skips the backend tests silently.
import { redactUrlSecrets } from "../../kit/redact.js";
import { databaseUrl, postgresAnswers, redisAnswers, redisUrl, startPostgresServer, startRedisServer, type TestServer } from "./servers.js";
import { startEtcdCluster } from "./etcd-servers.js";

const started: TestServer[] = [];

export async function setup(): Promise<void> {
  const redis = redisUrl();
  const pg = databaseUrl();
  const [redisUp, pgUp] = await Promise.all([redisAnswers(redis), postgresAnswers(pg)]);
  const problems: string[] = [];
  if (!redisUp) {
    try {
      const server = await startRedisServer();
      started.push(server);
      process.env.REDIS_URL = server.url;
      console.log(`[lockhost tests] nothing answers at ${redactUrlSecrets(redis)}; started a private redis-server at ${server.url}`);
    } catch (err) {
      problems.push(`Redis: nothing answers at ${redactUrlSecrets(redis)}, and a private server could not be started: ${(err as Error).message}`);
    }
  }
  if (!pgUp) {
    try {
      const server = await startPostgresServer();
      started.push(server);
      process.env.DATABASE_URL = server.url;
      console.log(`[lockhost tests] nothing answers at ${redactUrlSecrets(pg)}; started a private PostgreSQL at ${server.url}`);
    } catch (err) {
      problems.push(`PostgreSQL: nothing answers at ${redactUrlSecrets(pg)}, and a private server could not be started: ${(err as Error).message}`);
    }
  }
  if (process.env.ETCD_ENDPOINTS === undefined) {
    // No etcd runs as a machine service here: the run starts its own single member.
    try {
      const etcd = await startEtcdCluster(1);
      started.push({ stop: () => etcd.stop() } as TestServer);
      process.env.ETCD_ENDPOINTS = etcd.endpoints.join(",");
      console.log(`[lockhost tests] started a private etcd at ${process.env.ETCD_ENDPOINTS}`);
    } catch (err) {
      problems.push(`etcd: a private member could not be started: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) {
    await teardown();
    throw new Error(`the backend tests need Redis, PostgreSQL and etcd.\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

export async function teardown(): Promise<void> {
  await Promise.allSettled(started.splice(0).map((s) => s.stop()));
}
