// Private Redis and PostgreSQL servers for tests: on a free loopback port, from the binaries
// on PATH, owned by the test that started them. Fault tests kill and restart them; the global
// setup starts one of each when nothing answers at REDIS_URL / DATABASE_URL.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { sleep } from "./until.js";

/** A server a test may kill and start again on the same port. */
export interface TestServer {
  readonly url: string;
  readonly port: number;
  /** Stops it the hard way (Redis: SIGKILL; PostgreSQL: immediate shutdown) and waits for exit. */
  kill(): Promise<void>;
  /** (Re)starts it on the same port and waits until it answers. */
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  stop(): Promise<void>;
  /** Freezes it (SIGSTOP to its processes): connections stay open and nothing answers. */
  pause(): void;
  /** Lets a paused server run again (SIGCONT). */
  resume(): void;
}
export type RedisServer = TestServer;
export type PgServer = TestServer;

/** The Redis the shared tests use: REDIS_URL, or the machine's default. */
export const redisUrl = (): string => process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
/** The PostgreSQL the shared tests use: DATABASE_URL, or the machine's default. */
export const databaseUrl = (): string => process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const START_TIMEOUT_MS = 20_000;

/** A TCP port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((r) => server.close(() => r()));
  if (address === null || typeof address === "string") throw new Error("no free port");
  return address.port;
}

/**
 * Finds `name` on PATH or in `extraDirs`; throws a message that says exactly what is missing
 * and how to get it, so a newcomer's `npm test` explains itself.
 */
export function findBinary(name: string, extraDirs: readonly string[], install: string): string {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), ...extraDirs].filter(Boolean);
  for (const dir of dirs) {
    const path = join(dir, name);
    if (existsSync(path)) return path;
  }
  throw new Error(`${name} was not found on PATH (${dirs.join(delimiter)}); ${install}`);
}

/** PostgreSQL's server binaries live outside PATH on Debian. */
function postgresBinDirs(): string[] {
  const base = "/usr/lib/postgresql";
  if (!existsSync(base)) return [];
  const versions = spawnSync("ls", [base], { encoding: "utf8" }).stdout.split("\n").filter(Boolean);
  return versions.sort((a, b) => Number(b) - Number(a)).map((v) => join(base, v, "bin"));
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.connect(port, "127.0.0.1", () => done(true));
  });
}

async function waitUntil(what: string, check: () => Promise<boolean>, child: () => ChildProcess | undefined, log: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await check()) return;
    const c = child();
    if (c && c.exitCode !== null) throw new Error(`${what} exited with code ${c.exitCode} while starting:\n${log()}`);
    await sleep(50);
  }
  throw new Error(`${what} did not answer within ${START_TIMEOUT_MS} ms:\n${log()}`);
}

function exited(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once("exit", () => r()));
}

/** `pid` and its descendants, read from /proc (PostgreSQL serves each client from a child process). */
function processTree(pid: number): number[] {
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    let children = "";
    try {
      children = readFileSync(`/proc/${tree[i]}/task/${tree[i]}/children`, "utf8");
    } catch {
      continue; // gone meanwhile, or no /proc: signal what we have
    }
    for (const c of children.split(" ")) if (c.trim() !== "") tree.push(Number(c));
  }
  return tree;
}

/** Sends `signal` to the process we started and every process it started (only those, by PID). */
function signalTree(child: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  // Stop the parent first so it forks nothing we would miss; continue children first likewise.
  const pids = processTree(child.pid);
  for (const pid of signal === "SIGCONT" ? pids.reverse() : pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // exited meanwhile
    }
  }
}

/** TLS of a private server: its certificate and key, and the CA whose client certificates it requires. */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
  /** Clients must present a certificate this CA signed. */
  readonly ca: string;
}

/**
 * Starts a private redis-server (no persistence) on a free port. With `tls`, it listens only
 * for TLS (`--port 0 --tls-port`) and requires client certificates; its url is rediss://.
 */
export async function startRedisServer(options: { readonly tls?: ServerTls } = {}): Promise<RedisServer> {
  const tls = options.tls;
  const bin = findBinary("redis-server", [], "install Redis (Debian: apt install redis-server) or set REDIS_URL to a running server");
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "lockhost-redis-"));
  let child: ChildProcess | undefined;
  let output = "";
  const start = async (): Promise<void> => {
    output = "";
    const listen = tls
      ? [
          "--port",
          "0",
          "--tls-port",
          String(port),
          "--tls-cert-file",
          tls.cert,
          "--tls-key-file",
          tls.key,
          "--tls-ca-cert-file",
          tls.ca,
          "--tls-auth-clients",
          "yes",
        ]
      : ["--port", String(port)];
    child = spawn(bin, [...listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d: Buffer) => void (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => void (output += d.toString()));
    await waitUntil(
      `redis-server on port ${port}`,
      () => redisPing(port, tls),
      () => child,
      () => output,
    );
  };
  const kill = async (): Promise<void> => {
    child?.kill("SIGKILL");
    await exited(child);
  };
  await start();
  return {
    url: `${tls ? "rediss" : "redis"}://127.0.0.1:${port}`,
    port,
    kill,
    start,
    pause: () => signalTree(child, "SIGSTOP"),
    resume: () => signalTree(child, "SIGCONT"),
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Whether a Redis on `port` answers PING with PONG (a bare TCP accept is not enough while
 * loading); over TLS with `tls`, presenting its certificate as the client's (its CA signed it).
 */
function redisPing(port: number, tls?: ServerTls): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls
      ? tlsConnect({ host: "127.0.0.1", port, ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) })
      : new Socket();
    let reply = "";
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.on("data", (d: Buffer) => {
      reply += d.toString();
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
    if (tls) socket.once("secureConnect", () => socket.write("PING\r\n"));
    else socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
  });
}

/** How a private PostgreSQL runs. */
export interface PgServerOptions {
  /**
   * Commit synchronously (PostgreSQL's default), so a committed transaction survives the
   * server's crash, as in production. Off by default: faster, and a crash may then lose the
   * last commits (fsync stays off either way: the machine itself does not crash in a test).
   */
  readonly durableCommits?: boolean;
  /**
   * TLS (ssl = on) with this certificate and key; clients on 127.0.0.1 must then come over TLS
   * with a client certificate the CA signed, whose CN is the user (`hostssl … cert`). The
   * helper's own plain connection to database postgres as postgres stays allowed.
   */
  readonly tls?: ServerTls;
  /** More server settings, each passed as `-c name=value` (e.g. a small `max_locks_per_transaction`). */
  readonly settings?: Readonly<Record<string, string | number>>;
}

/**
 * Starts a private PostgreSQL (trust auth, user postgres, fsync off) on a free port, with a
 * database `test`. PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.
 */
export async function startPostgresServer(options: PgServerOptions = {}): Promise<PgServer> {
  const install = "install PostgreSQL's server (Debian: apt install postgresql) or set DATABASE_URL to a running server";
  const extra = postgresBinDirs();
  const initdb = findBinary("initdb", extra, install);
  const postgres = findBinary("postgres", extra, install);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "lockhost-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  // setpriv execs in place (runuser would fork), so the pid we hold is the postmaster's.
  const wrap = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ["setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", cmd, ...args]] : [cmd, args];
  if (asRoot) {
    const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    if (ids.status !== 0) throw new Error("running as root, and there is no 'postgres' user to run a private PostgreSQL as");
    chownSync(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
    chmodSync(dir, 0o700);
  }
  const [initCmd, initArgs] = wrap(initdb, ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const init = spawnSync(initCmd, initArgs, { encoding: "utf8" });
  if (init.status !== 0) throw new Error(`initdb failed (${init.status}):\n${init.stdout}\n${init.stderr}`);
  const tlsArgs: string[] = [];
  if (options.tls) {
    // PostgreSQL reads its key only when the server's user owns it, mode 0600.
    const files = { cert: join(dir, "server.crt"), key: join(dir, "server.key"), ca: join(dir, "ca.crt") };
    for (const k of ["cert", "key", "ca"] as const) {
      copyFileSync(options.tls[k], files[k]);
      chmodSync(files[k], 0o600);
      if (asRoot)
        chownSync(
          files[k],
          Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim()),
          Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim()),
        );
    }
    writeFileSync(join(data, "pg_hba.conf"), "local all all trust\nhostnossl postgres postgres 127.0.0.1/32 trust\nhostssl all all 127.0.0.1/32 cert\n");
    tlsArgs.push("-c", "ssl=on", "-c", `ssl_cert_file=${files.cert}`, "-c", `ssl_key_file=${files.key}`, "-c", `ssl_ca_file=${files.ca}`);
  }

  let child: ChildProcess | undefined;
  let output = "";
  const start = async (): Promise<void> => {
    output = "";
    const [cmd, args] = wrap(postgres, [
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "fsync=off",
      "-c",
      `synchronous_commit=${options.durableCommits === true ? "on" : "off"}`,
      "-c",
      "full_page_writes=off",
      ...tlsArgs,
      ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]),
    ]);
    child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout?.on("data", (d: Buffer) => void (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => void (output += d.toString()));
    await waitUntil(
      `postgres on port ${port}`,
      () => pgReady(port),
      () => child,
      () => output,
    );
  };
  const kill = async (): Promise<void> => {
    // SIGQUIT is PostgreSQL's immediate shutdown: every backend goes at once, as in a crash.
    // (SIGKILL on the postmaster alone would leave its backends serving their clients.)
    signalTree(child, "SIGCONT"); // a paused server would not act on it
    child?.kill("SIGQUIT");
    await exited(child);
  };
  await start();
  const created = await createDatabase(port, "test");
  if (!created.ok) {
    await kill();
    throw new Error(`could not create database test on the private PostgreSQL: ${created.error}`);
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    port,
    kill,
    start,
    pause: () => signalTree(child, "SIGSTOP"),
    resume: () => signalTree(child, "SIGCONT"),
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `sql` on a fresh connection; an error message instead of throwing. */
async function pgQuery(connection: import("pg").ClientConfig, sql: string): Promise<{ ok: true } | { ok: false; error: string }> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionTimeoutMillis: 1500, ...connection });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query(sql);
    return { ok: true };
  } catch (err) {
    return { ok: false, error: String(err) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

const privatePg = (port: number): import("pg").ClientConfig => ({ host: "127.0.0.1", port, user: "postgres", database: "postgres" });

/** Ready when it accepts a query, not only TCP: PostgreSQL accepts connections while starting up. */
async function pgReady(port: number): Promise<boolean> {
  return (await answers(port)) && (await pgQuery(privatePg(port), "select 1")).ok;
}

function createDatabase(port: number, name: string): Promise<{ ok: true } | { ok: false; error: string }> {
  return pgQuery({ ...privatePg(port), connectionTimeoutMillis: 10_000 }, `create database ${name}`);
}

/** Whether the Redis at `url` answers PING (used by the global setup). */
export async function redisAnswers(url: string): Promise<boolean> {
  const { Redis } = await import("ioredis");
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 1500, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Whether the PostgreSQL at `url` accepts a query (used by the global setup). */
export async function postgresAnswers(url: string): Promise<boolean> {
  return (await pgQuery({ connectionString: url }, "select 1")).ok;
}

/** A private Redis Cluster of primaries only, on loopback. */
export interface RedisClusterServer {
  /** A seed node's URL (any node works: the client discovers the others). */
  readonly url: string;
  /** The client port of every node. */
  readonly ports: readonly number[];
  /** Stops every node (SIGKILL) and removes their files. */
  stop(): Promise<void>;
}

/** Highest usable client port: the cluster bus listens 10000 above it. */
const MAX_CLUSTER_PORT = 65_535 - 10_000;

/** A free client port whose cluster bus port (+10000) is free as well. */
async function freeClusterPort(taken: ReadonlySet<number>): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await freePort();
    if (port > MAX_CLUSTER_PORT || taken.has(port) || taken.has(port + 10_000)) continue;
    if (!(await answers(port + 10_000))) return port;
  }
  throw new Error(`found no free port at or below ${MAX_CLUSTER_PORT} whose cluster bus port (+10000) is free as well`);
}

/** Reads CLUSTER INFO of the node on `port` with redis-cli ("" when it does not answer). */
function clusterInfo(cli: string, port: number): string {
  return spawnSync(cli, ["-h", "127.0.0.1", "-p", String(port), "cluster", "info"], { encoding: "utf8", timeout: 5_000 }).stdout ?? "";
}

/**
 * Starts a private Redis Cluster of `size` primaries (no replicas, no persistence) on free
 * loopback ports, joins them with `redis-cli --cluster create`, and waits until every node
 * reports cluster_state:ok. Needs redis-server and redis-cli 5 or newer.
 */
export async function startRedisCluster(size = 3): Promise<RedisClusterServer> {
  const install = "install Redis 5 or newer with its CLI (Debian: apt install redis-server redis-tools)";
  const server = findBinary("redis-server", [], install);
  const cli = findBinary("redis-cli", [], install);
  const dir = mkdtempSync(join(tmpdir(), "lockhost-redis-cluster-"));
  const ports: number[] = [];
  const taken = new Set<number>();
  for (let i = 0; i < size; i++) {
    const port = await freeClusterPort(taken);
    ports.push(port);
    taken.add(port).add(port + 10_000);
  }
  const children: ChildProcess[] = [];
  const outputs = new Map<number, string>();
  const stop = async (): Promise<void> => {
    for (const child of children) child.kill("SIGKILL");
    await Promise.all(children.map(exited));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      outputs.set(port, "");
      const child = spawn(
        server,
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--save",
          "",
          "--appendonly",
          "no",
          "--dir",
          dir,
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, `nodes-${port}.conf`),
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      const append = (d: Buffer): void => void outputs.set(port, outputs.get(port) + d.toString());
      child.stdout?.on("data", append);
      child.stderr?.on("data", append);
      children.push(child);
      await waitUntil(
        `cluster redis-server on port ${port}`,
        () => redisPing(port),
        () => child,
        () => outputs.get(port) ?? "",
      );
    }
    const create = spawnSync(cli, ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"], {
      encoding: "utf8",
      timeout: START_TIMEOUT_MS,
    });
    if (create.status !== 0) {
      throw new Error(`redis-cli --cluster create failed (${create.status ?? create.signal}):\n${create.stdout}\n${create.stderr}`);
    }
    // Every node must agree the cluster is up: a node that has not heard of the others yet
    // answers CLUSTERDOWN, which would make the first test flaky.
    const allOk = async (): Promise<boolean> => ports.every((p) => /^cluster_state:ok\r?$/m.test(clusterInfo(cli, p)));
    await waitUntil(
      "redis cluster (cluster_state:ok on every node)",
      allOk,
      () => children.find((c) => c.exitCode !== null),
      () => ports.map((p) => `--- node ${p}:\n${clusterInfo(cli, p)}${outputs.get(p) ?? ""}`).join("\n"),
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${ports[0]}`, ports, stop };
}
