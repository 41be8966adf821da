// A TCP proxy on loopback that a test can stall: while stalled, bytes in either direction are
// held (not dropped, not refused), as a network that stops delivering and later catches up.
// The fault suites put one between a host process and each etcd member to stall that host's
// network alone, while the host itself keeps running.
import { createServer, Socket, type Server } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** Holds (true) or delivers (false) every byte from now on; held bytes go out on release. */
  stall(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let stalled = false;
  const pending: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client);
    sockets.add(upstream);
    const pipe = (from: Socket, to: Socket): void => {
      from.on("data", (chunk: Buffer) => {
        if (stalled) pending.push(() => to.write(chunk));
        else to.write(chunk);
      });
    };
    const connect = (): void => {
      upstream.connect(targetPort, "127.0.0.1");
      pipe(client, upstream);
      pipe(upstream, client);
    };
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    if (stalled) pending.push(connect);
    else connect();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no port");
  return {
    port: address.port,
    stall(on) {
      stalled = on;
      if (!on) for (const send of pending.splice(0)) send();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
