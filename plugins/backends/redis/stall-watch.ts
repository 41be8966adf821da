// One timer per connection, in place of ioredis's commandTimeout and socketTimeout, which arm
// and clear a timer per command (and add a 'data' listener per reply): on the lock path that
// was ~4% of a try+release pair one at a time and ~7% of the throughput of 16 concurrent
// loops (bench part "redis"). One connection to one server answers in the order it was asked,
// so "a command waited commandTimeoutMs" is "the server sent nothing for commandTimeoutMs
// while a command was waiting", which one timer and the time of the last reply can tell.
//
// On a stall every waiting command rejects with ioredis's own "Command timed out" (errors.ts
// says it may have been applied) and the socket is destroyed, as socketTimeout did, so later
// calls fail at once and ioredis reconnects. A cluster client's commands go to many
// connections, each with its own order; it keeps ioredis's per-command timers (connect.ts).
import type { Redis } from "ioredis";

/**
 * Fails the commands of `client` (a single server's client, created without commandTimeout
 * and socketTimeout) that got no reply for `timeoutMs`, and drops the silent connection.
 * A command waits longer only while the server keeps answering the commands ahead of it.
 */
export function watchStalls(client: Redis, timeoutMs: number): void {
  /** When the server last sent anything, or the queue last went from empty to busy. */
  let progressAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const onData = (): void => {
    progressAt = performance.now();
  };
  // Each (re)connect makes a new socket.
  client.on("connect", () => client.stream.on("data", onData));

  const check = (): void => {
    timer = undefined;
    const queue = client.commandQueue;
    if (queue.length === 0) return;
    const quietMs = performance.now() - progressAt;
    // Timers fire on a whole-ms clock: within a ms of the limit counts as reached.
    if (quietMs < timeoutMs - 1) return arm(timeoutMs - quietMs);
    const err = new Error("Command timed out");
    for (let i = 0; i < queue.length; i++) queue.peekAt(i)?.command.reject(err);
    client.stream.destroy(new Error(`Socket timeout: no reply in ${timeoutMs} ms`));
  };
  const arm = (ms: number): void => {
    timer = setTimeout(check, Math.ceil(ms));
    timer.unref();
  };

  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    // A command sent to an idle connection starts the clock: the last reply was for another.
    if (client.commandQueue.length === 0) progressAt = performance.now();
    if (timer === undefined) arm(timeoutMs);
    return send(command, stream);
  };
}
