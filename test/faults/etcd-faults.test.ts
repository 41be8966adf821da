// The fault check on etcd: three host processes with four worker guests each fight over three
// keys on a private three-member etcd cluster (loopback, data in memory), every section writing
// through a fenced register, while a member is killed and restarted, the leader is killed, the
// member every client tries first is frozen, one host's network to etcd stalls past its TTL,
// a host is frozen past its TTL, another is killed and replaced, and the whole cluster restarts.
// Each host reaches each member through its own TCP proxy (test/support/tcp-proxy.ts), so its
// network alone can stall. etcd keeps its revisions through all of it: no fence may step back,
// and no two sections may overlap at all except where a frozen host explains it. Run twice: as
// configured by default, and with lock delegation (which needs scaled fences, `fence_scale`, on a
// key prefix of their own: the scale belongs to the prefix).
import { afterAll, beforeAll, describe, it } from "vitest";
import { startEtcdCluster, type EtcdCluster } from "../support/etcd-servers.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import type { TestServer } from "../support/servers.js";
import { expectSafeAndLive, runFaults, type Fault } from "./fault-run.js";

const TTL_MS = 1_000;
// Quiet time between faults: longer than a killed host's locks last (TTL + lease margin, in whole
// seconds: 2 s here), so every survivor can take locks after the last fault.
const SHAPE = { nodes: 3, guestsPerNode: 4, keys: 3, holdMs: 20, ttlMs: TTL_MS, gapMs: 3_500 } as const;

const FAULTS: readonly Fault[] = [
  { kind: "member-kill", member: 2, downMs: 1_500 },
  { kind: "member-kill", member: "leader", downMs: 1_500 },
  { kind: "member-pause", member: 0, forMs: 2.5 * TTL_MS },
  { kind: "host-stall", node: 2, forMs: 2.5 * TTL_MS },
  { kind: "host-pause", node: 3, forMs: 2.5 * TTL_MS },
  { kind: "server-restart" },
  { kind: "host-kill", node: 1 },
];

/** The index of the member that leads, asked of the members through etcd's JSON gateway. */
async function leaderOf(cluster: EtcdCluster): Promise<number> {
  for (;;) {
    const status = await Promise.all(
      cluster.endpoints.map(async (endpoint) => {
        try {
          const res = await fetch(`${endpoint}/v3/maintenance/status`, { method: "POST", body: "{}", signal: AbortSignal.timeout(500) });
          return (await res.json()) as { header?: { member_id?: string }; leader?: string };
        } catch {
          return undefined;
        }
      }),
    );
    const leader = status.find((s) => s?.leader !== undefined)?.leader;
    const i = status.findIndex((s) => s?.header?.member_id === leader);
    if (i >= 0) return i;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("faults on etcd (three members)", () => {
  let cluster: EtcdCluster;
  /** Each host's proxies, one per member (a replacement host uses its predecessor's). */
  const proxies = new Map<string, TcpProxy[]>();
  const group = (node: string): string => node.split(".")[0]!;

  beforeAll(async () => {
    cluster = await startEtcdCluster(3);
    for (let n = 1; n <= SHAPE.nodes; n++) {
      proxies.set(`node-${n}`, await Promise.all(cluster.endpoints.map((e) => startTcpProxy(Number(new URL(e).port)))));
    }
  }, 60_000);
  afterAll(async () => {
    for (const list of proxies.values()) for (const p of list) await p.close();
    await cluster?.stop();
  }, 60_000);

  it.each([false, true])(
    "keeps exclusion and fences, tells holders, and stays live through member, leader, network and host faults (delegated: %s)",
    async (delegated) => {
      // The whole cluster as one server (server-restart kills and restarts every member).
      const server: TestServer = {
        url: cluster.endpoints.join(","),
        port: 0,
        kill: async () => void (await Promise.all(cluster.members.map((m) => m.kill()))),
        start: async () => {
          await Promise.all(cluster.members.map((m) => m.start()));
          await leaderOf(cluster);
        },
        stop: async () => undefined,
        pause: () => cluster.members.forEach((m) => m.pause()),
        resume: () => cluster.members.forEach((m) => m.resume()),
      };
      const r = await runFaults({
        ...SHAPE,
        server,
        killSessions: async () => undefined,
        faults: FAULTS,
        locking: (node) => ({
          backend: "etcd",
          etcd: {
            endpoints: proxies.get(group(node))!.map((p) => `http://127.0.0.1:${p.port}`),
            keyPrefix: delegated ? "faults-delegated/" : "faults/",
            commandTimeoutMs: 1_000,
            leaseMarginMs: 1_000,
            ...(delegated && { fenceScale: 1_024 }),
          },
          ...(delegated && { delegation: { enabled: true } }),
        }),
        members: {
          members: cluster.members,
          leader: () => leaderOf(cluster),
          stall: (node, on) => proxies.get(group(node))!.forEach((p) => p.stall(on)),
        },
      });
      expectSafeAndLive(delegated ? "etcd delegated" : "etcd", r);
    },
    240_000,
  );
});
