// The part of etcd's v3 gRPC API this backend speaks (etcdserverpb's rpc.proto and mvccpb's
// kv.proto, etcd 3.4): a protobuf JSON descriptor for @grpc/proto-loader's fromJSON (ETCD_PROTO:
// field names and numbers exactly as etcd declares them, only the messages and methods used
// here; kept in code rather than as a .proto file so that no path has to be found at run time),
// then the shapes of those messages as they are decoded here.

type Fields = Record<string, string>;

/** A message from "name: type id" pairs ("repeated" and "oneof:<group>" as prefixes). */
function message(spec: Fields): object {
  const fields: Record<string, { type: string; id: number; rule?: string }> = {};
  const oneofs: Record<string, { oneof: string[] }> = {};
  for (const [name, decl] of Object.entries(spec)) {
    const parts = decl.split(" ");
    const id = Number(parts.pop());
    const type = parts.pop()!;
    const field: { type: string; id: number; rule?: string } = { type, id };
    for (const p of parts) {
      if (p === "repeated") field.rule = "repeated";
      else if (p.startsWith("oneof:")) (oneofs[p.slice(6)] ??= { oneof: [] }).oneof.push(name);
    }
    fields[name] = field;
  }
  return Object.keys(oneofs).length > 0 ? { fields, oneofs } : { fields };
}

const unary = (requestType: string, responseType: string): object => ({ requestType, responseType });
const stream = (requestType: string, responseType: string): object => ({ requestType, responseType, requestStream: true, responseStream: true });

const header = "ResponseHeader 1";

/** The descriptor: packages mvccpb and etcdserverpb. */
export const ETCD_PROTO = {
  nested: {
    mvccpb: {
      nested: {
        KeyValue: message({ key: "bytes 1", create_revision: "int64 2", mod_revision: "int64 3", version: "int64 4", value: "bytes 5", lease: "int64 6" }),
        Event: {
          ...message({ type: "EventType 1", kv: "KeyValue 2", prev_kv: "KeyValue 3" }),
          nested: { EventType: { values: { PUT: 0, DELETE: 1 } } },
        },
      },
    },
    etcdserverpb: {
      nested: {
        ResponseHeader: message({ cluster_id: "uint64 1", member_id: "uint64 2", revision: "int64 3", raft_term: "uint64 4" }),
        RangeRequest: message({
          key: "bytes 1",
          range_end: "bytes 2",
          limit: "int64 3",
          revision: "int64 4",
          sort_order: "int32 5",
          sort_target: "int32 6",
          serializable: "bool 7",
          keys_only: "bool 8",
          count_only: "bool 9",
        }),
        RangeResponse: message({ header, kvs: "repeated mvccpb.KeyValue 2", more: "bool 3", count: "int64 4" }),
        PutRequest: message({ key: "bytes 1", value: "bytes 2", lease: "int64 3", prev_kv: "bool 4", ignore_value: "bool 5", ignore_lease: "bool 6" }),
        PutResponse: message({ header, prev_kv: "mvccpb.KeyValue 2" }),
        DeleteRangeRequest: message({ key: "bytes 1", range_end: "bytes 2", prev_kv: "bool 3" }),
        DeleteRangeResponse: message({ header, deleted: "int64 2", prev_kvs: "repeated mvccpb.KeyValue 3" }),
        RequestOp: message({
          request_range: "oneof:request RangeRequest 1",
          request_put: "oneof:request PutRequest 2",
          request_delete_range: "oneof:request DeleteRangeRequest 3",
          request_txn: "oneof:request TxnRequest 4",
        }),
        ResponseOp: message({
          response_range: "oneof:response RangeResponse 1",
          response_put: "oneof:response PutResponse 2",
          response_delete_range: "oneof:response DeleteRangeResponse 3",
          response_txn: "oneof:response TxnResponse 4",
        }),
        // result: EQUAL 0, GREATER 1, LESS 2, NOT_EQUAL 3; target: VERSION 0, CREATE 1, MOD 2, VALUE 3, LEASE 4.
        Compare: message({
          result: "int32 1",
          target: "int32 2",
          key: "bytes 3",
          version: "oneof:target_union int64 4",
          create_revision: "oneof:target_union int64 5",
          mod_revision: "oneof:target_union int64 6",
          value: "oneof:target_union bytes 7",
          lease: "oneof:target_union int64 8",
          range_end: "bytes 64",
        }),
        TxnRequest: message({ compare: "repeated Compare 1", success: "repeated RequestOp 2", failure: "repeated RequestOp 3" }),
        TxnResponse: message({ header, succeeded: "bool 2", responses: "repeated ResponseOp 3" }),
        WatchRequest: message({
          create_request: "oneof:request_union WatchCreateRequest 1",
          cancel_request: "oneof:request_union WatchCancelRequest 2",
          progress_request: "oneof:request_union WatchProgressRequest 3",
        }),
        WatchCreateRequest: message({
          key: "bytes 1",
          range_end: "bytes 2",
          start_revision: "int64 3",
          progress_notify: "bool 4",
          prev_kv: "bool 6",
          watch_id: "int64 7",
          fragment: "bool 8",
        }),
        WatchCancelRequest: message({ watch_id: "int64 1" }),
        WatchProgressRequest: message({}),
        WatchResponse: message({
          header,
          watch_id: "int64 2",
          created: "bool 3",
          canceled: "bool 4",
          compact_revision: "int64 5",
          cancel_reason: "string 6",
          fragment: "bool 7",
          events: "repeated mvccpb.Event 11",
        }),
        LeaseGrantRequest: message({ TTL: "int64 1", ID: "int64 2" }),
        LeaseGrantResponse: message({ header, ID: "int64 2", TTL: "int64 3", error: "string 4" }),
        LeaseRevokeRequest: message({ ID: "int64 1" }),
        LeaseRevokeResponse: message({ header }),
        LeaseKeepAliveRequest: message({ ID: "int64 1" }),
        LeaseKeepAliveResponse: message({ header, ID: "int64 2", TTL: "int64 3" }),
        AuthenticateRequest: message({ name: "string 1", password: "string 2" }),
        AuthenticateResponse: message({ header, token: "string 2" }),
        StatusRequest: message({}),
        StatusResponse: message({ header, version: "string 2", dbSize: "int64 3", leader: "uint64 4", raftIndex: "uint64 5", raftTerm: "uint64 6" }),
        KV: { methods: { Range: unary("RangeRequest", "RangeResponse"), Txn: unary("TxnRequest", "TxnResponse") } },
        Watch: { methods: { Watch: stream("WatchRequest", "WatchResponse") } },
        Lease: {
          methods: {
            LeaseGrant: unary("LeaseGrantRequest", "LeaseGrantResponse"),
            LeaseRevoke: unary("LeaseRevokeRequest", "LeaseRevokeResponse"),
            LeaseKeepAlive: stream("LeaseKeepAliveRequest", "LeaseKeepAliveResponse"),
          },
        },
        Auth: { methods: { Authenticate: unary("AuthenticateRequest", "AuthenticateResponse") } },
        Maintenance: { methods: { Status: unary("StatusRequest", "StatusResponse") } },
      },
    },
  },
} as const;

// The shapes of etcd's messages as @grpc/proto-loader decodes them here (longs as strings,
// bytes as Buffers, defaults filled in). Only the fields this backend reads or writes.

export interface KeyValue {
  readonly key: Buffer;
  readonly create_revision: string;
  readonly mod_revision: string;
  readonly version: string;
  readonly value: Buffer;
  readonly lease: string;
}

export interface ResponseHeader {
  readonly revision: string;
}

export interface RangeRequest {
  readonly key: Buffer | string;
  readonly range_end?: Buffer | string;
  readonly limit?: number;
  readonly serializable?: boolean;
  readonly keys_only?: boolean;
  readonly count_only?: boolean;
}

export interface RangeResponse {
  readonly header: ResponseHeader;
  readonly kvs: readonly KeyValue[];
  readonly more: boolean;
  readonly count: string;
}

export interface PutRequest {
  readonly key: Buffer | string;
  readonly value?: Buffer | string;
  readonly lease?: string;
  readonly ignore_lease?: boolean;
}

export interface DeleteRangeRequest {
  readonly key: Buffer | string;
  readonly range_end?: Buffer | string;
  readonly prev_kv?: boolean;
}

/** Compare.result */
export const CMP = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } as const;
/** Compare.target */
export const TARGET = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } as const;

export interface Compare {
  readonly result: number;
  readonly target: number;
  readonly key: Buffer | string;
  readonly range_end?: Buffer | string;
  readonly version?: string | number;
  readonly create_revision?: string | number;
  readonly mod_revision?: string | number;
  readonly value?: Buffer | string;
  readonly lease?: string;
}

export type RequestOp = { readonly request_range: RangeRequest } | { readonly request_put: PutRequest } | { readonly request_delete_range: DeleteRangeRequest };

export interface TxnRequest {
  readonly compare?: readonly Compare[];
  readonly success?: readonly RequestOp[];
  readonly failure?: readonly RequestOp[];
}

export interface ResponseOp {
  readonly response?: "response_range" | "response_put" | "response_delete_range" | "response_txn";
  readonly response_range?: RangeResponse;
  readonly response_delete_range?: { readonly deleted: string; readonly prev_kvs: readonly KeyValue[] };
}

export interface TxnResponse {
  readonly header: ResponseHeader;
  readonly succeeded: boolean;
  readonly responses: readonly ResponseOp[];
}

export interface WatchResponse {
  readonly header: ResponseHeader;
  readonly watch_id: string;
  readonly created: boolean;
  readonly canceled: boolean;
  readonly compact_revision: string;
  readonly cancel_reason: string;
  readonly events: readonly { readonly type: "PUT" | "DELETE" | number; readonly kv: KeyValue; readonly prev_kv: KeyValue | null }[];
}

export interface LeaseGrantResponse {
  readonly ID: string;
  readonly TTL: string;
  readonly error: string;
}

export interface LeaseKeepAliveResponse {
  readonly ID: string;
  readonly TTL: string;
}
