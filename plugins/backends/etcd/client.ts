// A small etcd v3 client over @grpc/grpc-js: the unary calls and the two streams this backend
// uses, with a deadline on every call, endpoint failover, and user/password authentication.
// Made at once (only the TLS files are read then); both gRPC packages are imported, and the
// members' channels made, on the first call, never at a descriptor's load nor at construction.
import type * as Grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { LockhostError, readTlsFiles, type TlsFiles } from "../../../kit/index.js";
import { etcdTlsOn, type EtcdConfig } from "./config.js";
import { etcdError, isExpiredToken, isUnreachable } from "./errors.js";
import type { LeaseGrantResponse, RangeRequest, RangeResponse, TxnRequest, TxnResponse } from "./proto.js";
import { ETCD_PROTO } from "./proto.js";

type Unary = (req: object, meta: Grpc.Metadata, opts: Grpc.CallOptions, cb: (err: Grpc.ServiceError | null, res: unknown) => void) => void;
type ServiceClient = Grpc.Client & Record<string, Unary & ((meta: Grpc.Metadata, opts?: Grpc.CallOptions) => Grpc.ClientDuplexStream<object, unknown>)>;
type ServiceName = "KV" | "Lease" | "Watch" | "Auth" | "Maintenance";

/** One endpoint's channel and its service stubs. */
interface Member {
  readonly address: string;
  readonly services: Record<ServiceName, ServiceClient>;
}

/** A bidirectional stream of etcd's (watch, lease keepalive). */
export type EtcdStream = Grpc.ClientDuplexStream<object, unknown>;

/** grpc-js and a channel per endpoint, once loaded. */
interface Loaded {
  readonly grpc: typeof Grpc;
  readonly members: readonly Member[];
}

/** An etcd client for one backend instance. */
export class EtcdClient {
  /** Set once the first call has loaded grpc-js and made the channels. */
  #loaded: Loaded | undefined;
  /** That loading, while in flight (a failed one is tried again by the next call). */
  #loading: Promise<Loaded> | undefined;
  readonly #config: EtcdConfig;
  readonly #log: Logger;
  /** The TLS files (https:// endpoints), for messages about a refused handshake. */
  readonly #tls: TlsFiles | undefined;
  #current = 0;
  #token: Promise<string> | undefined;
  #closed = false;
  readonly #failoverListeners: (() => void)[] = [];

  /** Reads the TLS files (a file that cannot be read is a config error); connects nothing. */
  constructor(config: EtcdConfig, log: Logger) {
    this.#tls = etcdTlsOn(config) ? readTlsFiles("[locking.etcd]", config) : undefined;
    this.#config = config;
    this.#log = log;
  }

  /** grpc-js and the channels, loaded on first use: a failure fails that call (and is tried again by the next). */
  #load(): Loaded | Promise<Loaded> {
    if (this.#loaded !== undefined) return this.#loaded;
    this.#loading ??= this.#open().then(
      (loaded) => {
        this.#loading = undefined;
        this.#loaded = loaded;
        if (this.#closed) closeMembers(loaded.members);
        return loaded;
      },
      (err: unknown) => {
        this.#loading = undefined;
        throw err;
      },
    );
    return this.#loading;
  }

  /** Loads grpc-js and proto-loader and makes a channel per endpoint (connected lazily). */
  async #open(): Promise<Loaded> {
    const config = this.#config;
    const tls = this.#tls;
    const [grpc, loader] = await Promise.all([
      importClient<typeof Grpc>("@grpc/grpc-js"),
      importClient<typeof import("@grpc/proto-loader")>("@grpc/proto-loader"),
    ]);
    const definition = loader.fromJSON(ETCD_PROTO as never, { keepCase: true, longs: String, enums: String, bytes: Buffer, defaults: true, oneofs: true });
    const pkg = grpc.loadPackageDefinition(definition) as unknown as {
      etcdserverpb: Record<ServiceName, new (address: string, creds: Grpc.ChannelCredentials, options: object) => ServiceClient>;
    };
    const credentials = tls ? grpc.credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null) : grpc.credentials.createInsecure();
    const options = {
      // The name the members' certificates must carry, in place of the endpoint's host.
      ...(tls?.servername !== undefined && { "grpc.ssl_target_name_override": tls.servername, "grpc.default_authority": tls.servername }),
      // Pings find a dead connection under an idle stream; etcd refuses pings more often than every 5 s.
      "grpc.keepalive_time_ms": 5_000,
      "grpc.keepalive_timeout_ms": Math.max(1_000, config.commandTimeoutMs),
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1_000,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    };
    const members = config.endpoints.map((endpoint): Member => {
      const address = new URL(endpoint).host;
      const channel = new grpc.Channel(address, credentials, options);
      const make = (name: ServiceName): ServiceClient => new pkg.etcdserverpb[name](address, credentials, { ...options, channelOverride: channel });
      return {
        address: endpoint,
        services: { KV: make("KV"), Lease: make("Lease"), Watch: make("Watch"), Auth: make("Auth"), Maintenance: make("Maintenance") },
      };
    });
    return { grpc, members };
  }

  /** How messages name the cluster: the endpoint in use. */
  get server(): string {
    return `etcd at ${this.#config.endpoints[this.#current]!}`;
  }

  range(req: RangeRequest): Promise<RangeResponse> {
    return this.#call("KV", "Range", withBytes(req), true) as Promise<RangeResponse>;
  }

  /** A transaction; never retried (it may have been applied before a connection broke). */
  txn(req: TxnRequest, what?: string): Promise<TxnResponse> {
    const compare = req.compare?.map(withBytes);
    const ops = (list: TxnRequest["success"]) => list?.map((op) => Object.fromEntries(Object.entries(op).map(([k, v]) => [k, withBytes(v as object)])));
    return this.#call("KV", "Txn", { compare, success: ops(req.success), failure: ops(req.failure) }, false, what) as Promise<TxnResponse>;
  }

  /** A lease of `ttlS` seconds; resolves to its id and the TTL etcd granted (never below the server's minimum). */
  async leaseGrant(ttlS: number): Promise<{ id: string; ttlS: number }> {
    const res = (await this.#call("Lease", "LeaseGrant", { TTL: ttlS, ID: 0 }, false, "a lease grant")) as LeaseGrantResponse;
    if (res.error) throw new LockhostError("BACKEND_UNAVAILABLE", `${this.server} refused a lease of ${ttlS} s: ${res.error}`);
    return { id: res.ID, ttlS: Number(res.TTL) };
  }

  /** Revokes a lease (its keys go with it); a lease already gone is fine. */
  async leaseRevoke(id: string): Promise<void> {
    try {
      await this.#call("Lease", "LeaseRevoke", { ID: id }, true, "a lease revoke");
    } catch (err) {
      if (!/lease not found/.test(String((err as Error).message))) throw err;
    }
  }

  /** Resolves once a member answers a status request (ping). */
  async status(timeoutMs = this.#config.dialTimeoutMs): Promise<void> {
    await this.#call("Maintenance", "Status", {}, true, "a status request", timeoutMs);
  }

  /** Opens a bidirectional stream on the member in use (Watch.Watch or Lease.LeaseKeepAlive). */
  async stream(service: "Watch" | "Lease"): Promise<EtcdStream> {
    const meta = await this.#metadata();
    const stub = this.#loaded!.members[this.#current]!.services[service];
    return stub[service === "Watch" ? "Watch" : "LeaseKeepAlive"]!(meta) as EtcdStream;
  }

  /** Moves to the next endpoint (after a stream or a call found this one unreachable). */
  failover(): void {
    const endpoints = this.#config.endpoints;
    if (endpoints.length > 1) {
      this.#current = (this.#current + 1) % endpoints.length;
      this.#log.debug({ endpoint: endpoints[this.#current]! }, "etcd: using the next endpoint");
    }
    for (const listener of this.#failoverListeners) listener();
  }

  /** Calls `listener` whenever a stream or call found the endpoint in use stuck or unreachable (streams start over, on the next one if any). */
  onFailover(listener: () => void): void {
    this.#failoverListeners.push(listener);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // Channels still loading are closed once made (#load).
    if (this.#loaded !== undefined) closeMembers(this.#loaded.members);
  }

  async #call(
    service: ServiceName,
    method: string,
    req: object,
    retryable: boolean,
    what = "the request",
    timeoutMs = this.#config.commandTimeoutMs,
  ): Promise<unknown> {
    if (this.#closed) throw new LockhostError("CLOSED", "the etcd backend is closed");
    let attempts = retryable ? this.#config.endpoints.length : 1;
    let reauthenticated = false;
    for (;;) {
      const member = this.#current;
      try {
        return await this.#once(member, service, method, req, timeoutMs);
      } catch (err) {
        if (isExpiredToken(err) && !reauthenticated) {
          // Refused before it was applied: a fresh token makes the same call safe to send again.
          reauthenticated = true;
          this.#token = undefined;
          continue;
        }
        if (isUnreachable(err)) {
          if (member === this.#current) this.failover();
          if (--attempts > 0) continue;
        }
        throw etcdError(err, `etcd at ${this.#config.endpoints[member]!}`, timeoutMs, what, this.#tls);
      }
    }
  }

  async #once(member: number, service: ServiceName, method: string, req: object, timeoutMs = this.#config.commandTimeoutMs): Promise<unknown> {
    const { grpc, members } = this.#loaded ?? (await this.#load());
    // Authenticate itself goes without a token (it is how one is got).
    const meta = service === "Auth" ? new grpc.Metadata() : await this.#metadata();
    const stub = members[member]!.services[service];
    return new Promise((resolve, reject) => {
      stub[method]!(req, meta, { deadline: Date.now() + timeoutMs }, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  /** Call metadata: the auth token when a user is configured. */
  async #metadata(): Promise<Grpc.Metadata> {
    const { grpc } = this.#loaded ?? (await this.#load());
    const meta = new grpc.Metadata();
    if (this.#config.username !== "") meta.set("token", await this.#authToken());
    return meta;
  }

  #authToken(): Promise<string> {
    this.#token ??= (async () => {
      const res = (await this.#once(this.#current, "Auth", "Authenticate", { name: this.#config.username, password: this.#config.password })) as {
        token: string;
      };
      return res.token;
    })().catch((err: unknown) => {
      this.#token = undefined;
      throw etcdError(err, this.server, this.#config.commandTimeoutMs, "authentication", this.#tls);
    });
    return this.#token;
  }
}

/** The message with its bytes fields (keys, range ends, values) as Buffers: protobufjs reads a string there as base64. */
export function withBytes<T extends object>(message: T): T {
  const out = { ...message } as Record<string, unknown>;
  for (const field of ["key", "range_end", "value"]) {
    const v = out[field];
    if (typeof v === "string") out[field] = Buffer.from(v, "utf8");
  }
  return out as T;
}

/** Closes every service stub of `members` (their channels go with them). */
function closeMembers(members: readonly Member[]): void {
  for (const m of members) for (const s of Object.values(m.services)) s.close();
}

/** Imports an optional client package, saying what to install when it is missing. */
async function importClient<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") {
      throw new LockhostError("BACKEND_UNAVAILABLE", `the etcd backend needs ${name}: npm install @grpc/grpc-js @grpc/proto-loader`, {
        details: { permanent: 1 },
      });
    }
    throw err;
  }
}
