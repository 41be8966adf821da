// A host process that campaigns for one election in a loop until the test kills it: campaign,
// lead for a random short time, resign (or be told it lost), rest a little, campaign again.
// node test/support/campaigner.mjs <pg|redis> <url> <table or key prefix> <options JSON>, the
// options being { election, node, ttlMs, leadMs: [min, max], restMs: [min, max] }. Built code
// (dist/), as a real host runs, with the service's default keepalive and waiting settings.
//
// It prints one JSON line per event on stdout, each with `node` and `at` (Date.now() when it
// happened; the test shares the machine's clock):
//   {"ready":true}                          the service is made; campaigning starts
//   {"leading":term}                        campaign resolved: this process leads `term`
//   {"resigned":term,"doneAt":ms}           it stepped down: `at` is when it decided to (before
//                                           resign() was called), `doneAt` when resign() resolved
//   {"lost":term,"reason":code}             its leadership's signal aborted other than by its own
//                                           resignation (also while resign() was under way)
//   {"error":message}                       a campaign failed (the backend unreachable); it retries
import { childBackend, LockService } from "./child-backend.mjs";

const [kind, url, where, json] = process.argv.slice(2);
const { election, node, ttlMs, leadMs, restMs } = JSON.parse(json);
const backend = await childBackend(kind, url, where);
const locks = new LockService(backend, { node });
const say = (event) => process.stdout.write(JSON.stringify({ node, ...event, at: event.at ?? Date.now() }) + "\n");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const between = ([min, max]) => min + Math.random() * (max - min);

say({ ready: true });
for (;;) {
  let leadership;
  try {
    leadership = await locks.campaign(election, { ttlMs, value: node });
  } catch (err) {
    say({ error: `${err?.code ?? ""} ${err?.message ?? String(err)}`.trim() });
    await sleep(50);
    continue;
  }
  const term = leadership.term;
  say({ leading: term });
  const ended = new Promise((resolve) => {
    const onEnd = () => {
      const reason = leadership.signal.reason;
      // ALREADY_RELEASED is its own resignation; anything else (LOST) is a loss it was told of.
      if (reason?.code !== "ALREADY_RELEASED") say({ lost: term, reason: reason?.code ?? String(reason) });
      resolve();
    };
    if (leadership.signal.aborted) onEnd();
    else leadership.signal.addEventListener("abort", onEnd, { once: true });
  });
  const stillLeading = await Promise.race([sleep(between(leadMs)).then(() => true), ended.then(() => false)]);
  if (stillLeading) {
    const at = Date.now();
    try {
      await leadership.resign();
      say({ resigned: term, at, doneAt: Date.now() });
    } catch (err) {
      // The backend did not answer: the leadership ends at its TTL (the signal says when).
      say({ resigned: term, at, doneAt: Date.now(), error: err?.code ?? String(err) });
    }
  }
  await sleep(between(restMs));
}
