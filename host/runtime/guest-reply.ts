// What a guest gets back from one ABI call, and the one place where an error becomes such a
// reply: the operations (lock-calls/, capabilities) throw, and the dispatch (lock-ops.ts runOp)
// turns whatever they throw into (-code, message) here.
import type { Logger } from "pino";
import { toLockhostError } from "../../kit/errors.js";

/**
 * The answer to one ABI call: `result < 0` is -code and `text` its message; otherwise `text` is
 * the output string, if any, or `bytes` the output of a call whose reply is bytes (an HTTP
 * response, a host function's result).
 */
export interface AbiReply {
  readonly result: number;
  readonly text?: string;
  readonly bytes?: Uint8Array;
}

/** The reply for a failed call: -code and its message (a host bug, INTERNAL, is logged too). */
export function errorReply(err: unknown, log: Logger): AbiReply {
  const e = toLockhostError(err);
  if (e.code === "INTERNAL") log.error({ err }, "lock call failed inside the host");
  return { result: -e.status, text: e.message };
}

/** A successful reply whose output is `json` (its length in UTF-8 bytes is the result). */
export const textReply = (json: string): AbiReply => ({ result: Buffer.byteLength(json), text: json });
