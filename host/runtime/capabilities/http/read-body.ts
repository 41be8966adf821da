// A response body read up to the grant's cap and no further: past it the stream is destroyed
// (the connection is dropped rather than drained), so a remote that streams without end costs
// at most max_response_bytes of memory.
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { GrantRules } from "./grant-rules.js";
import { tooLarge } from "./http-errors.js";

/**
 * The body of a response, or TOO_LARGE as soon as it is known to be over the cap. `method`:
 * a HEAD response's content-length is the size of a body it does not carry.
 */
export async function readBody(rules: GrantRules, origin: string, method: string, headers: IncomingHttpHeaders, body: Readable): Promise<Uint8Array> {
  const cap = rules.grant.maxResponseBytes;
  const declared = headers["content-length"] === undefined || method === "HEAD" ? NaN : Number(headers["content-length"]);
  if (declared > cap) {
    body.destroy();
    throw tooLarge(rules, origin, `content-length ${declared}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > cap) {
      body.destroy();
      throw tooLarge(rules, origin, `${size} bytes read when it stopped`);
    }
    chunks.push(chunk);
  }
  // One chunk is the common case for small replies: hand it over without a copy.
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}
