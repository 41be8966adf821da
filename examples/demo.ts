// `npm start`: the example ledger service (a resource that refuses stale fences, through
// lockhost/fence) and, in the same process, `lockhost run --config examples/demo.toml
// --local-nodes 2` whose ledger plugin writes to it with its lock's fence. LEDGER_URL tells the plugin's
// [plugins.config] where the service listens, LEDGER_HOST its [plugins.http] allow-list. Extra arguments go to `lockhost run`.
import { main } from "../host/cli/cli.js";
import { exitWhenFlushed } from "../host/cli/exit.js";
import { sayIfOldNode } from "../host/cli/node-notice.js";
import { registerBackend } from "../host/registry/registry.js";
import { BUILTIN_BACKENDS } from "../plugins/backends/index.js";
import { startLedgerService } from "./ledger-service.js";

sayIfOldNode();
// A composition root, as host/cli/main.ts is: the built-in backends register here.
for (const descriptor of BUILTIN_BACKENDS) registerBackend(descriptor);
const ledger = await startLedgerService({ log: (line) => console.log(`ledger service: ${line}`) });
console.log(`ledger service: listening on ${ledger.url}`);
process.env.LEDGER_URL = ledger.url;
process.env.LEDGER_HOST = new URL(ledger.url).host;
const code = await main(["run", "--config", "examples/demo.toml", "--local-nodes", "2", ...process.argv.slice(2)]);
await ledger.close();
await exitWhenFlushed(code);
