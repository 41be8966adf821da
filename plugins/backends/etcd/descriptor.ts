// The etcd backend as the registry knows it. @grpc/grpc-js and @grpc/proto-loader are imported
// only when a host creates this backend, so a host on another backend never loads them.
import { defineBackend } from "../../../kit/index.js";
import { etcdConfigSchema, type EtcdConfig } from "./config.js";

/** `backend = "etcd"`: locks in an etcd v3 cluster, fenced by its revisions, shared by every host on it. */
export const etcdBackend = defineBackend<EtcdConfig>({
  name: "etcd",
  description: "etcd v3 (gRPC): consensus-backed locks, revision fences, leases, watch wake-ups",
  distributed: true,
  config: etcdConfigSchema,
  async create(config, { log }) {
    const { EtcdBackend } = await import("./index.js");
    return new EtcdBackend(config, log);
  },
});
