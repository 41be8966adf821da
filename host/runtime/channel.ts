// The shared-memory channel between a guest's worker and the main thread: one request or
// reply at a time (one call in flight per guest). Layout of the SharedArrayBuffer:
//   Int32 slots (below), a Float64 result at RESULT_BYTE, and a byte area at DATA_BYTE
//   that carries the request's key bytes (then, for restore, the owner token's bytes right
//   after them) and then the reply's text.
// Sequence numbers rather than flags: each side waits for the other's counter to move, so no
// wake-up is ever lost and neither side spins.

/** Int32 slot indices. */
export const REQ_SEQ = 0;
export const RESP_SEQ = 1;
export const OP = 2;
export const ARG0 = 3;
export const ARG1 = 4;
export const DATA_LEN = 5;
export const TEXT_LEN = 6;
export const ARG2 = 7;
/** Length of the second byte string (restore's owner token), stored after the key. */
export const DATA2_LEN = 8;

/** Byte offset of the Float64 result (fences need more than 31 bits). */
export const RESULT_BYTE = 64;
/** Byte offset and size of the data area. */
export const DATA_BYTE = 128;
export const DATA_BYTES = 64 * 1024;

/** Lock operations that cross to the main thread. */
export const Op = {
  TRY: 1,
  RENEW: 2,
  RELEASE: 3,
  FENCE: 4,
  OWNER: 5,
  STATUS: 6,
  ACQUIRE: 7,
  STATE: 8,
  RESTORE: 9,
} as const;

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
