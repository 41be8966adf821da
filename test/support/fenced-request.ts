// An HTTP client for the fence tests: node:http rather than fetch, because fetch joins a
// repeated header into one line and these tests must be able to send it twice.
import { request } from "node:http";

/** A reply: its status and its body parsed as JSON (undefined when empty). */
export interface JsonReply {
  readonly status: number;
  readonly body: Record<string, unknown> | undefined;
}

/** Header values as node:http sends them: a list is sent as that many header lines. */
export type RawHeaders = Record<string, string | readonly string[]>;

/** The two fence headers for `lock` and `fence`. */
export const fenced = (lock: string, fence: bigint | number | string): RawHeaders => ({
  "lockhost-lock": lock,
  "lockhost-fence": String(fence),
});

/** Sends `method url` with `headers` and a JSON `body`, on a connection of its own. */
export function send(method: string, url: string, headers: RawHeaders = {}, body?: unknown): Promise<JsonReply> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: res.statusCode ?? 0, body: text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>) });
      });
    });
    req.on("error", reject);
    for (const [name, value] of Object.entries(headers)) req.setHeader(name, typeof value === "string" ? value : [...value]);
    if (body !== undefined) req.setHeader("content-type", "application/json");
    // A Buffer, not a string: node:http would write a string body together with the headers,
    // in the body's encoding (UTF-8), where the headers alone go as latin1, byte for char.
    req.end(body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
  });
}
