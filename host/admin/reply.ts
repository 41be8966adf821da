// One way the admin listener answers with a body: with its length, so that a HEAD request gets
// the same status and headers as the GET it stands for (Node leaves the body of a response to
// HEAD out by itself).
import type { ServerResponse } from "node:http";

/** Answers `status` with `headers`, `body` and its content-length. */
export function reply(res: ServerResponse, status: number, headers: Readonly<Record<string, string>>, body: string): void {
  res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(body)) });
  res.end(body);
}
