// Private etcd servers for tests, from the `etcd` binary on PATH (Debian: etcd-server), on free
// loopback ports: one member for the contract suites (started by the global setup when
// ETCD_ENDPOINTS is not set), or a cluster of three for the fault cases, whose members a test
// kills, restarts, pauses and resumes. Elections are tuned short (heartbeat 50 ms, election
// timeout 500 ms) so a lost leader is replaced in well under a second; etcd's smallest lease is
// then 1 s (1.5 election timeouts, in whole seconds).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findBinary, freePort, type ServerTls } from "./servers.js";
import { sleep } from "./until.js";

/** One member a test may kill, restart (same data), pause and resume. */
export interface EtcdMember {
  readonly name: string;
  readonly endpoint: string;
  kill(): Promise<void>;
  start(): Promise<void>;
  pause(): void;
  resume(): void;
  readonly pid: number | undefined;
}

export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Every member's client URL. */
  readonly endpoints: string[];
  /** Kills every member and removes their data. */
  stop(): Promise<void>;
}

/** The etcd the shared tests use: ETCD_ENDPOINTS (comma-separated), set by the global setup. */
export const etcdEndpoints = (): string[] => (process.env.ETCD_ENDPOINTS ?? "http://127.0.0.1:2379").split(",");

const START_TIMEOUT_MS = 20_000;

/**
 * Whether the member at `endpoint` says it is healthy (it has a leader); over https with `tls`,
 * presenting the server's own certificate as the client's (the CA signed it).
 */
export async function etcdHealthy(endpoint: string, tls?: ServerTls): Promise<boolean> {
  if (tls) {
    return new Promise((resolve) => {
      const req = request(`${endpoint}/health`, { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key), timeout: 500 }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => void (body += d.toString()));
        res.on("end", () => resolve(res.statusCode === 200 && /"health":\s*"true"/.test(body)));
      });
      req.on("error", () => resolve(false));
      req.on("timeout", () => req.destroy());
      req.end();
    });
  }
  try {
    const res = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(500) });
    return res.ok && ((await res.json()) as { health?: string }).health === "true";
  } catch {
    return false;
  }
}

/**
 * Starts `size` members on loopback and waits until all of them are healthy. With `tls`, the
 * client URLs are https:// and clients must present a certificate the CA signed
 * (--client-cert-auth); peers still talk plain http among themselves.
 */
export async function startEtcdCluster(size = 1, options: { readonly tls?: ServerTls } = {}): Promise<EtcdCluster> {
  const tls = options.tls;
  const bin = findBinary("etcd", ["/usr/bin"], "install etcd (Debian: apt install etcd-server) or set ETCD_ENDPOINTS to a running cluster");
  // In memory where the machine has it: etcd fsyncs every write, and these tests are about the
  // protocol, not the disk (a slow disk made single writes take 0.6 s here).
  const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "lockhost-etcd-"));
  const token = `lockhost-${process.pid}-${Date.now()}`;
  const ports: { client: number; peer: number }[] = [];
  for (let i = 0; i < size; i++) ports.push({ client: await freePort(), peer: await freePort() });
  const names = ports.map((_, i) => `m${i}`);
  const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${ports[i]!.peer}`).join(",");
  const members = names.map((name, i): EtcdMember & { output: string } => {
    let child: ChildProcess | undefined;
    const endpoint = `${tls ? "https" : "http"}://127.0.0.1:${ports[i]!.client}`;
    const member = {
      name,
      endpoint,
      output: "",
      get pid() {
        return child?.pid;
      },
      async start() {
        member.output = "";
        // etcd's tuning guide gives etcd a higher CPU priority than its neighbours (renice):
        // a test run loads every core, and a starved member answers a Raft write in 100+ ms.
        // Only root may raise a priority; others run it as is.
        const [cmd, pre] = process.getuid?.() === 0 ? ["nice", ["-n", "-10", bin]] : [bin, []];
        child = spawn(
          cmd,
          [
            ...pre,
            "--name",
            name,
            "--data-dir",
            join(dir, name),
            "--listen-client-urls",
            endpoint,
            "--advertise-client-urls",
            endpoint,
            "--listen-peer-urls",
            `http://127.0.0.1:${ports[i]!.peer}`,
            "--initial-advertise-peer-urls",
            `http://127.0.0.1:${ports[i]!.peer}`,
            "--initial-cluster",
            initialCluster,
            "--initial-cluster-token",
            token,
            "--initial-cluster-state",
            "new",
            "--heartbeat-interval",
            "50",
            "--election-timeout",
            "500",
            "--log-level",
            "error",
            "--logger",
            "zap",
            ...(tls ? ["--cert-file", tls.cert, "--key-file", tls.key, "--trusted-ca-file", tls.ca, "--client-cert-auth"] : []),
          ],
          { stdio: ["ignore", "pipe", "pipe"] },
        );
        child.stdout?.on("data", (d: Buffer) => void (member.output = (member.output + d.toString()).slice(-4000)));
        child.stderr?.on("data", (d: Buffer) => void (member.output = (member.output + d.toString()).slice(-4000)));
      },
      async kill() {
        const c = child;
        if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
        c.kill("SIGCONT");
        c.kill("SIGKILL");
        await new Promise<void>((r) => c.once("exit", () => r()));
      },
      pause() {
        child?.kill("SIGSTOP");
      },
      resume() {
        child?.kill("SIGCONT");
      },
    };
    return member;
  });
  await Promise.all(members.map((m) => m.start()));
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (const m of members) {
    while (!(await etcdHealthy(m.endpoint, tls))) {
      if (Date.now() > deadline) {
        await Promise.all(members.map((x) => x.kill()));
        throw new Error(`etcd member ${m.name} did not become healthy at ${m.endpoint}:\n${m.output}`);
      }
      await sleep(50);
    }
  }
  return {
    members,
    endpoints: members.map((m) => m.endpoint),
    async stop() {
      await Promise.all(members.map((m) => m.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
