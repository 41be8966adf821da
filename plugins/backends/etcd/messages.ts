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

export type RequestOp =
  | { readonly request_range: RangeRequest }
  | { readonly request_put: PutRequest }
  | { readonly request_delete_range: DeleteRangeRequest };

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
