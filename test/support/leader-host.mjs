// A host process that campaigns for one election and leads until the test kills it (SIGKILL) or
// pauses it (SIGSTOP/SIGCONT): node test/support/leader-host.mjs <pg|redis> <url> <table or key
// prefix> <election> <ttl ms>. Built code (dist/), as a real host runs. It prints one JSON line
// per event on stdout: {"leading":term} once it leads, {"lost":term,"reason":code} when its
// leadership's signal aborts, so a test can tell what it believed and when.
import { childBackend, LockService } from "./child-backend.mjs";

const [kind, url, where, election, ttl] = process.argv.slice(2);
const backend = await childBackend(kind, url, where);
const locks = new LockService(backend, { node: "doomed" });
const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const leadership = await locks.campaign(election, { ttlMs: Number(ttl), value: "doomed" });
leadership.signal.addEventListener("abort", () => say({ lost: leadership.term, reason: leadership.signal.reason?.code ?? String(leadership.signal.reason) }));
say({ leading: leadership.term });
setInterval(() => undefined, 60_000);
