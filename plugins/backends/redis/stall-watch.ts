// One timer per connection, in place of ioredis's commandTimeout and socketTimeout, which arm
// and clear a timer per command (and add a 'data' listener per reply): on the lock path that
// was ~4% of a try+release pair one at a time and ~7% of the throughput of 16 concurrent
// loops (bench part "redis"). Both rules stay as they were:
// - a command with no reply commandTimeoutMs after it was sent rejects with ioredis's own
//   "Command timed out" (errors.ts says it may have been applied), the connection kept;
// - a connection that received nothing for commandTimeoutMs while a command waited is
//   destroyed, so later calls fail at once and ioredis reconnects.
// One connection to one server answers in the order it was asked, so the commands waiting
// are the last ones sent, oldest first: their send times in a list, the time of the last
// reply, and one timer armed for the earliest of the two deadlines tell both. A cluster
// client's commands go to many connections; it keeps ioredis's per-command timers (connect.ts).
import type { Redis } from "ioredis";

/**
 * Applies commandTimeout and socketTimeout, both `timeoutMs`, to `client` (a single server's
 * client, created without them) with one timer.
 */
export function watchStalls(client: Redis, timeoutMs: number): void {
  /** Send times of the commands written, oldest first; the last `commandQueue.length` wait for replies. */
  let sent: number[] = [];
  /** When the connection last received anything, or last went from idle to waiting. */
  let progressAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const onData = (): void => {
    progressAt = performance.now();
  };
  // Each (re)connect makes a new socket.
  client.on("connect", () => client.stream.on("data", onData));

  const check = (): void => {
    timer = undefined;
    const waiting = client.commandQueue.length;
    // The answered ones are the oldest: drop them.
    if (sent.length > waiting) sent = sent.slice(sent.length - waiting);
    if (waiting === 0) return;
    // Timers fire on a whole-ms clock: within a ms of the limit counts as reached.
    const due = performance.now() - timeoutMs + 1;
    let expired = 0;
    while (expired < waiting && sent[expired]! <= due) expired++;
    // Nothing received for the whole timeout: the server (or the path to it) is silent.
    const silent = progressAt <= due;
    rejectFirst(client, silent ? waiting : expired);
    if (silent) {
      client.stream.destroy(new Error(`Socket timeout: nothing received in ${timeoutMs} ms`));
      sent = [];
      return;
    }
    arm(Math.min(progressAt, sent[expired] ?? Infinity) + timeoutMs - performance.now());
  };
  const arm = (ms: number): void => {
    timer = setTimeout(check, Math.max(1, Math.ceil(ms)));
    timer.unref();
  };

  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    const queue = client.commandQueue;
    const before = queue.length;
    const result = send(command, stream);
    // Only a command written to the socket waits for a reply (one refused at once does not).
    if (queue.length > before) {
      const now = performance.now();
      // Sent to an idle connection: the clock of silence starts now, not at the last reply.
      if (before === 0) progressAt = now;
      sent.push(now);
      if (timer === undefined) arm(timeoutMs);
    }
    return result;
  };
}

/** Rejects the first `count` commands queued on `client` with "Command timed out" (a command already settled ignores it). */
function rejectFirst(client: Redis, count: number): void {
  const queue = client.commandQueue;
  for (let i = 0; i < count; i++) queue.peekAt(i)?.command.reject(new Error("Command timed out"));
}
