// Ending the process once what it wrote has left it. process.exit() drops what a pipe has not
// taken yet (stdout and stderr are asynchronous on a POSIX pipe): `lockhost locks --json | jq`
// got the first 64 KiB and exit code 0. So the exit code is set first, then both streams are
// drained, then the process exits (a lingering handle, a client's idle socket, must not keep it).
import type { Writable } from "node:stream";

/** Sets the exit code, waits until stdout and stderr have handed every byte to the OS, then exits. */
export async function exitWhenFlushed(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

/** Resolves once `stream` has written everything queued before this call (or can write nothing more). */
export function flushed(stream: Writable): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed || stream.writableEnded) return Promise.resolve();
  // Writes complete in order: the callback of an empty write runs after every earlier one. A
  // reader that went away (EPIPE) ends the wait too.
  return new Promise((resolve) => {
    stream.once("error", () => resolve());
    stream.write("", () => resolve());
  });
}
