// The etcd backend against the shared single-member etcd (ETCD_ENDPOINTS, started by the global
// setup): the whole backend contract (every kind, lifecycle, lock sets, election).
import { randomUUID } from "node:crypto";
import { pino } from "pino";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { backendContract } from "../testing/index.js";
import { etcdEndpoints } from "./support/etcd-servers.js";

const silent = pino({ level: "silent" });
const prefix = `lockhost-test/${randomUUID().slice(0, 8)}/`;
const config = (over: Partial<EtcdConfig> = {}): EtcdConfig => ({ ...etcdDefaults, endpoints: etcdEndpoints(), keyPrefix: prefix, ...over });

backendContract("etcd", { create: () => EtcdBackend.open(config(), silent), fences: "clock" });
