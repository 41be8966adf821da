// @ts-check
// Starts and stops a Host from the built package entry on the backend named by argv[3], then
// prints which client libraries the process loaded. ioredis, pg and grpc-js are CommonJS, so anything
// that imported them is in the CommonJS module cache, whoever imported it.
import { createRequire } from "node:module";
import { pino } from "pino";

const [dist, backend] = process.argv.slice(2);
const { Host, resolveConfig } = await import(/** @type {string} */ (dist));
const etcd = backend === "etcd" ? { etcd: { endpoints: (process.env.ETCD_ENDPOINTS ?? "http://127.0.0.1:2379").split(",") } } : {};
const host = await Host.start(resolveConfig({ host: { logLevel: "silent" }, locking: { backend, ...etcd } }), { logger: pino({ level: "silent" }) });
await host.stop();
const loaded = Object.keys(createRequire(import.meta.url).cache);
console.log(
  JSON.stringify({
    ioredis: loaded.some((p) => p.includes("/node_modules/ioredis/")),
    pg: loaded.some((p) => /\/node_modules\/pg\//.test(p)),
    grpc: loaded.some((p) => p.includes("/node_modules/@grpc/grpc-js/")),
  }),
);
