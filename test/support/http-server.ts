// The local HTTP servers guests write to in tests: listening on a free loopback port, and closed
// with their keep-alive connections (a guest's undici agent keeps one open, which close() alone
// would wait for).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Starts `server` on a free loopback port; resolves to its base URL (`http://127.0.0.1:<port>`). */
export async function listenLocal(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes `server` and every connection it still has. */
export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
