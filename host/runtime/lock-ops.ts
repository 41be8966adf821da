// The host side of every operation that reaches the host: the boundary that turns a call's raw
// arguments into checked, typed values (flags against the operation's mask, text decoded once,
// bytes copied out of guest memory), one record that maps each operation of abi/ops.ts to the
// lock call (lock-calls/) or capability that serves it, and the one place where what it throws
// becomes the guest's reply (runOp, through guest-reply.ts). A row of the table without an
// entry here does not compile.
//
// A key is checked here, once: its length against the row's limit where the runtime read it off
// guest memory (host-imports.ts OpImport.read, before any trip to the host), its emptiness and
// UTF-8 as it is decoded below. What it becomes (the full lock name) is not checked again on the
// way to the backend.
import { ARG_FORMS, type OPS, type ArgForm, type ArgKind, type OpName, type OpSpec, type RemoteOpName } from "../../abi/ops.js";
import { checkFlags, decodeText } from "./abi-args.js";
import type { GuestLocks } from "./guest-locks.js";
import { errorReply, type AbiReply } from "./guest-reply.js";
import type { CallContext } from "./call-context.js";
import type { GuestCapabilities } from "./capabilities/guest-capabilities.js";
import { permitSpec, READ, WRITE } from "../../kit/kinds.js";
import { acquireLock, restoreLock, tryLock } from "./lock-calls/acquisition.js";
import { releaseLock, renewLock } from "./lock-calls/renew-release.js";
import { lockFence, lockOwner, lockState, lockStatus } from "./lock-calls/queries.js";
import { campaignLock, leaderOf, proclaimLock, resignLock } from "./lock-calls/election.js";
import { context } from "@opentelemetry/api";
import type { TraceSlot } from "../tracing/tracer.js";

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
  readonly [K in Row<N>["args"][number] as Fields[K]]: (typeof ARG_FORMS)[K]["form"] extends "text"
    ? string
    : (typeof ARG_FORMS)[K]["form"] extends "bytes"
      ? Uint8Array
      : number;
};

export type { CallContext } from "./call-context.js";

/** What a guest's remote operations are served by. */
export interface GuestCalls {
  readonly locks: GuestLocks;
  readonly caps: GuestCapabilities;
  /** The running call's trace context, which its operations run under (their spans are its children). */
  readonly trace?: TraceSlot;
}

/** Each remote operation: the lock call (lock-calls/) or capability that serves it. They throw; runOp makes the reply. */
const IMPLEMENTATIONS: {
  readonly [N in RemoteOpName]: (calls: GuestCalls, args: ArgsOf<N>, ctx: CallContext) => Promise<AbiReply> | AbiReply;
} = {
  try: ({ locks }, a) => tryLock(locks, a.key, a.ttlMs, a.flags),
  acquire: ({ locks }, a, ctx) => acquireLock(locks, a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit()),
  renew: ({ locks }, a) => renewLock(locks, a.handle, a.ttlMs),
  release: ({ locks }, a) => releaseLock(locks, a.handle),
  fence: ({ locks }, a) => lockFence(locks, a.handle),
  owner: ({ locks }, a) => lockOwner(locks, a.handle),
  status: ({ locks }, a) => lockStatus(locks, a.key, a.flags),
  state: ({ locks }, a) => lockState(locks, a.handle),
  restore: ({ locks }, a) => restoreLock(locks, a.key, a.owner, a.ttlMs, a.flags),
  try_read: ({ locks }, a) => tryLock(locks, a.key, a.ttlMs, a.flags, READ),
  try_write: ({ locks }, a) => tryLock(locks, a.key, a.ttlMs, a.flags, WRITE),
  acquire_read: ({ locks }, a, ctx) => acquireLock(locks, a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), READ),
  acquire_write: ({ locks }, a, ctx) => acquireLock(locks, a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), WRITE),
  try_permit: ({ locks }, a) => tryLock(locks, a.key, a.ttlMs, a.flags, permitSpec(a.permits)),
  acquire_permit: ({ locks }, a, ctx) => acquireLock(locks, a.key, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit(), permitSpec(a.permits)),
  request: ({ caps }, a, ctx) => caps.http(a.request, a.body, a.handle, a.flags, ctx),
  "<function>": ({ caps }, a, ctx) => caps.call(ctx.fn ?? -1, a.input, ctx),
  try_campaign: ({ locks }, a) => campaignLock(locks, a.key, a.value, a.ttlMs, 0, a.flags),
  campaign: ({ locks }, a, ctx) => campaignLock(locks, a.key, a.value, a.ttlMs, a.waitMs, a.flags, ctx.waitLimit()),
  proclaim: ({ locks }, a) => proclaimLock(locks, a.handle, a.value),
  resign: ({ locks }, a) => resignLock(locks, a.handle),
  leader: ({ locks }, a) => leaderOf(locks, a.key, a.flags),
};

/**
 * Runs one remote operation whose raw arguments the runtime hands over: `number(i)` is its
 * i-th number argument, `bytes(i)` its i-th string argument's bytes (both in ABI order), and
 * hands its reply to `answer`, at once when the operation answers at once. What the operation
 * throws or rejects with, bad input included, becomes its (-code, message) reply here: the one
 * place (errorReply). `answer` goes in the reply's own `.then`, so an operation that waits costs
 * no promise more than its own.
 */
export function runOp<T>(
  calls: GuestCalls,
  op: OpSpec,
  number: (i: number) => number,
  bytes: (i: number) => Uint8Array,
  ctx: CallContext,
  answer: (reply: AbiReply) => T | Promise<T>,
): T | Promise<T> {
  const impl = (IMPLEMENTATIONS as Record<string, ((calls: GuestCalls, args: never, ctx: CallContext) => Promise<AbiReply> | AbiReply) | undefined>)[op.name];
  const failed = (err: unknown): T | Promise<T> => answer(errorReply(err, calls.locks.log));
  if (!impl) return failed(new Error(`${op.module}.${op.name} is not served by the host`));
  let reply: Promise<AbiReply> | AbiReply;
  try {
    const args = checkedArgs(op, number, bytes) as never;
    // During a traced call its operations run under its span's context (their spans are its children).
    const traced = calls.trace?.context;
    reply = traced === undefined ? impl(calls, args, ctx) : context.with(traced, impl, undefined, calls, args, ctx);
  } catch (err) {
    return failed(err);
  }
  return reply instanceof Promise ? reply.then(answer, failed) : answer(reply);
}

/**
 * The arguments of `op`, checked in one place: flags against its mask first, then each text
 * (decoded: not empty unless its form allows it, valid UTF-8; its length was checked against
 * the form's limit where it was read, OpImport.read) or bytes argument (copied: the host may
 * keep it after the guest runs on).
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
    if (form.form === "text") args[kind] = decodeText(bytes(s++), kind, form.minBytes);
    else if (form.form === "bytes") {
      const view = bytes(s++);
      args[kind] = view.byteLength === 0 ? NO_BYTES : view.slice();
    }
  }
  return args;
}

const NO_BYTES = new Uint8Array(0);
