// The host side of every operation that reaches the host: the boundary that turns a call's raw
// arguments into checked, typed values (flags against the operation's mask, text decoded once,
// bytes copied out of guest memory), and one record that maps each operation of abi/ops.ts to
// its GuestLocks or GuestCapabilities method. A row of the table without an entry here does
// not compile.
import { ARG_FORMS, OPS, type ArgForm, type ArgKind, type OpName, type OpSpec, type RemoteOpName } from "../../abi/ops.js";
import { checkFlags, decodeUtf8 } from "./abi-args.js";
import type { AbiReply, GuestLocks } from "./guest-locks.js";
import type { CallContext } from "./call-context.js";
import type { GuestCapabilities } from "./capabilities/guest-capabilities.js";
import { permitSpec, READ, WRITE } from "../../kit/kinds.js";

/** The field an argument kind is decoded into. */
interface Fields {
  key: "key";
  owner: "owner";
  handle: "handle";
  ttl: "ttlMs";
  wait: "waitMs";
  permits: "permits";
  flags: "flags";
  name: "name";
  request: "request";
  message: "message";
  body: "body";
  input: "input";
  level: "level";
  out: never;
  value: "value";
}
const FIELD: { readonly [K in ArgKind]: Fields[K] | undefined } = {
  key: "key",
  owner: "owner",
  handle: "handle",
  ttl: "ttlMs",
  wait: "waitMs",
  permits: "permits",
  flags: "flags",
  name: "name",
  request: "request",
  message: "message",
  body: "body",
  input: "input",
  level: "level",
  out: undefined,
  value: "value",
};

type Row<N extends OpName> = Extract<(typeof OPS)[number], { name: N }>;

/** The checked arguments of operation `N`: text decoded, bytes copied, numbers as given. */
export type ArgsOf<N extends OpName> = {
  readonly [K in Row<N>["args"][number] as Fields[K]]: (typeof ARG_FORMS)[K]["form"] extends "text" ? string : (typeof ARG_FORMS)[K]["form"] extends "bytes" ? Uint8Array : number;
};

export type { CallContext } from "./call-context.js";

/** What a guest's remote operations are served by. */
export interface GuestCalls {
  readonly locks: GuestLocks;
  readonly caps: GuestCapabilities;
}

/** Each remote operation, on the guest's GuestLocks or GuestCapabilities. */
const IMPLEMENTATIONS: {
  readonly [N in RemoteOpName]: (calls: GuestCalls, args: ArgsOf<N>, ctx: CallContext) => Promise<AbiReply> | AbiReply;
} = {
  try: ({ locks }, a) => locks.try(a.key, a.ttlMs, a.flags),
  acquire: ({ locks }, a, ctx) => locks.acquire(a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit()),
  renew: ({ locks }, a) => locks.renew(a.handle, a.ttlMs),
  release: ({ locks }, a) => locks.release(a.handle),
  fence: ({ locks }, a) => locks.fence(a.handle),
  owner: ({ locks }, a) => locks.owner(a.handle),
  status: ({ locks }, a) => locks.status(a.key, a.flags),
  state: ({ locks }, a) => locks.state(a.handle),
  restore: ({ locks }, a) => locks.restore(a.key, a.owner, a.ttlMs, a.flags),
  try_read: ({ locks }, a) => locks.try(a.key, a.ttlMs, a.flags, READ),
  try_write: ({ locks }, a) => locks.try(a.key, a.ttlMs, a.flags, WRITE),
  acquire_read: ({ locks }, a, ctx) => locks.acquire(a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), READ),
  acquire_write: ({ locks }, a, ctx) => locks.acquire(a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), WRITE),
  try_permit: ({ locks }, a) => locks.try(a.key, a.ttlMs, a.flags, permitSpec(a.permits)),
  acquire_permit: ({ locks }, a, ctx) => locks.acquire(a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), permitSpec(a.permits)),
  request: ({ caps }, a, ctx) => caps.http(a.request, a.body, a.handle, a.flags, ctx),
  "<function>": ({ caps }, a, ctx) => caps.call(ctx.fn ?? -1, a.input, ctx),
  try_campaign: ({ locks }, a) => locks.campaign(a.key, a.value, a.ttlMs, 0, a.flags),
  campaign: ({ locks }, a, ctx) => locks.campaign(a.key, a.value, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit()),
  proclaim: ({ locks }, a) => locks.proclaim(a.handle, a.value),
  resign: ({ locks }, a) => locks.resign(a.handle),
  leader: ({ locks }, a) => locks.leader(a.key, a.flags),
};

/**
 * Runs one remote operation whose raw arguments the runtime hands over: `number(i)` is its
 * i-th number argument, `bytes(i)` its i-th string argument's bytes (both in ABI order).
 * Bad input becomes its (-code, message) reply like any other failure.
 */
export function runOp(
  calls: GuestCalls,
  op: OpSpec,
  number: (i: number) => number,
  bytes: (i: number) => Uint8Array,
  ctx: CallContext,
): Promise<AbiReply> | AbiReply {
  const impl = (IMPLEMENTATIONS as Record<string, ((calls: GuestCalls, args: never, ctx: CallContext) => Promise<AbiReply> | AbiReply) | undefined>)[op.name];
  if (!impl) return calls.locks.failure(new Error(`${op.module}.${op.name} is not served by the host`));
  try {
    return impl(calls, checkedArgs(op, number, bytes) as never, ctx);
  } catch (err) {
    return calls.locks.failure(err);
  }
}

/**
 * The arguments of `op`, checked in one place: flags against its mask first, then each text
 * (decoded) or bytes argument (copied: the host may keep it after the guest runs on).
 */
function checkedArgs(op: OpSpec, number: (i: number) => number, bytes: (i: number) => Uint8Array): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  let n = 0;
  let s = 0;
  for (const kind of op.args) {
    const field = FIELD[kind];
    if (field !== undefined && ARG_FORMS[kind].form === "number") args[field] = number(n++);
  }
  if (op.flags !== 0) checkFlags(args.flags as number, op.flags, op.name);
  for (const kind of op.args) {
    const form: ArgForm = ARG_FORMS[kind];
    if (form.form === "text") args[kind] = decodeUtf8(bytes(s++), kind, form.maxBytes, form.minBytes);
    else if (form.form === "bytes") {
      const view = bytes(s++);
      args[kind] = view.byteLength === 0 ? NO_BYTES : view.slice();
    }
  }
  return args;
}

const NO_BYTES = new Uint8Array(0);
