// ioredis and pg are dependencies (and grpc-js an optional peer), but a host loads each only when its backend is chosen: the
// package entry and the backend registry import no client library.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const entry = pathToFileURL(join(root, "dist/host/index.js")).href;
const probe = join(root, "test/support/client-probe.mjs");

async function clientsLoaded(backend: string): Promise<{ ioredis: boolean; pg: boolean; grpc: boolean }> {
  const { stdout } = await promisify(execFile)(process.execPath, [probe, entry, backend], { cwd: root, timeout: 20_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { ioredis: boolean; pg: boolean; grpc: boolean };
}

describe("client libraries load lazily", () => {
  it("a host on the memory backend loads none of ioredis, pg and grpc-js", async () => {
    expect(await clientsLoaded("memory")).toEqual({ ioredis: false, pg: false, grpc: false });
  });

  it("a host on redis loads ioredis only, on pg pg only, on etcd grpc-js only", async () => {
    expect(await clientsLoaded("redis")).toEqual({ ioredis: true, pg: false, grpc: false });
    expect(await clientsLoaded("pg")).toEqual({ ioredis: false, pg: true, grpc: false });
    expect(await clientsLoaded("etcd")).toEqual({ ioredis: false, pg: false, grpc: true });
  });
});
