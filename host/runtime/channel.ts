// The shared-memory channel between a guest's worker and the main thread: one request or
// reply at a time (one call in flight per guest). Its encoding comes from the operation table
// (abi/ops.ts): an operation travels as its index in OPS, its number arguments in the ARG
// slots in ABI order, its string arguments' bytes one after the other in the data area with
// their lengths in the STR_LEN slots; the reply is a Float64 result and, in the data area, its
// text. Layout of the SharedArrayBuffer: Int32 slots (below), the Float64 result at
// RESULT_BYTE, and the data area at DATA_BYTE. What does not fit the data area (a large HTTP
// body or host function reply) travels as one message on a MessagePort beside the buffer,
// sent before the wake-up and read with receiveMessageOnPort: the blocked side needs no event
// loop to get it, and the common small call pays nothing for it.
// Sequence numbers rather than flags: each side waits for the other's counter to move, so no
// wake-up is ever lost and neither side spins.
import { isString, OPS, type ArgKind, type OpSpec } from "../../abi/ops.js";
import { receiveMessageOnPort, type MessagePort } from "node:worker_threads";

/** Int32 slot indices. */
export const REQ_SEQ = 0;
export const RESP_SEQ = 1;
/** The operation: its index in OPS. */
export const OP = 2;
/** The length of the reply's text in the data area; BULK_TEXT when it came as a port message. */
export const TEXT_LEN = 3;
/** The first of the number-argument slots. */
export const ARG = 4;
/** 1 when a request's strings came as a port message instead of in the data area. */
export const BULK = 9;
/** The first of the string-length slots. */
export const STR_LEN = 10;
/** TEXT_LEN's value for a reply sent on the port. */
export const BULK_TEXT = -1;

/** Byte offset of the Float64 result (fences need more than 31 bits). */
export const RESULT_BYTE = 64;
/** Byte offset and size of the data area. */
export const DATA_BYTE = 128;
export const DATA_BYTES = 64 * 1024;

/**
 * How many times the guest's thread checks the reply slot before it sleeps in Atomics.wait
 * (about 10 µs). A reply that comes back meanwhile spares both threads a futex sleep and
 * wake-up, most of a round trip's cost; the worker stops spinning for an operation whose
 * replies take longer (worker/thread.ts). The bench shows the floor with and without it.
 */
export const SPINS_BEFORE_SLEEP = 2_000;

/** Whether an argument kind travels in a number slot (strings and output buffers do not). */
export const isNumber = (kind: ArgKind): boolean => !isString(kind) && kind !== "out";

// The slots are fixed; the table must fit them (checked once, at load).
for (const op of OPS as readonly OpSpec[]) {
  if (op.args.filter(isNumber).length > BULK - ARG || op.args.filter(isString).length > RESULT_BYTE / 4 - STR_LEN) {
    throw new Error(`abi/ops.ts: ${op.name} has more arguments than the channel has slots`);
  }
}

/** The one message a side sent on the port before its wake-up: the bytes that did not fit. */
export function receiveBulk(port: MessagePort): Uint8Array {
  const received = receiveMessageOnPort(port);
  if (!received) throw new Error("channel: the bulk message announced by the other side is missing");
  return received.message as Uint8Array;
}

/** Typed views over one channel buffer. */
export class Channel {
  readonly i32: Int32Array;
  readonly f64: Float64Array;
  readonly data: Uint8Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(DATA_BYTE + DATA_BYTES)) {
    this.i32 = new Int32Array(buffer, 0, RESULT_BYTE / 4);
    this.f64 = new Float64Array(buffer, RESULT_BYTE, 1);
    this.data = new Uint8Array(buffer, DATA_BYTE, DATA_BYTES);
  }
}
