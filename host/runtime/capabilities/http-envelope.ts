// How an HTTP request and its response cross the ABI as text a guest in any language can write
// and read without a JSON library: the request head is `METHOD URL` and one `Name: value` line
// per header; the response is the status, its header lines, a blank line, then the body bytes.
import { LockhostError } from "../../../kit/errors.js";
import type { GuestHttpResponse } from "./http/index.js";

/** The parts of a guest's request head. */
export interface RequestHead {
  readonly method: string;
  readonly url: string;
  readonly headers: readonly (readonly [string, string])[];
}

/** Parses a request head; INVALID_ARGUMENT naming the line at fault. */
export function parseRequestHead(head: string): RequestHead {
  const lines = head.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  // One newline at the end is how many writers end their last line.
  if (lines.length > 1 && lines.at(-1) === "") lines.pop();
  const first = lines[0]!;
  const space = first.indexOf(" ");
  if (space <= 0 || space === first.length - 1 || first.indexOf(" ", space + 1) >= 0) {
    throw new LockhostError("INVALID_ARGUMENT", `request line 1 must be "METHOD URL" (one space between), got ${JSON.stringify(first.slice(0, 200))}`);
  }
  const headers = lines.slice(1).map((line, i): [string, string] => {
    const colon = line.indexOf(":");
    if (colon <= 0)
      throw new LockhostError("INVALID_ARGUMENT", `request line ${i + 2} must be a header "Name: value", got ${JSON.stringify(line.slice(0, 200))}`);
    return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
  });
  return { method: first.slice(0, space), url: first.slice(space + 1), headers };
}

const utf8 = new TextEncoder();

/** The response as the guest reads it: `<status>\n`, `name: value\n` per header, `\n`, body. */
export function encodeResponse(res: GuestHttpResponse): Uint8Array {
  let head = `${res.status}\n`;
  for (const [name, value] of res.headers) head += `${name}: ${value}\n`;
  const headBytes = utf8.encode(`${head}\n`);
  const out = new Uint8Array(headBytes.byteLength + res.body.byteLength);
  out.set(headBytes, 0);
  out.set(res.body, headBytes.byteLength);
  return out;
}
