// The contract the built-in backends run: lockhost/testing's suite (what a third-party backend
// runs too), then the cases that need the host's own admin listener, which the published suite
// leaves out so that lockhost/testing loads no HTTP server or metrics.
import { pino } from "pino";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAdminServer } from "../../host/admin/server.js";
import type { LockBackend } from "../../kit/backend.js";
import { LockService } from "../../host/locking/service.js";
import { backendContract as publishedContract, type ContractTarget } from "../../testing/index.js";
import { closeBackends, hostBackends } from "../../testing/target.js";

const silent = pino({ level: "silent" });

/** Registers lockhost/testing's contract and the admin listener's cases for one backend. */
export function backendContract(name: string, target: ContractTarget): void {
  publishedContract(name, target);
  adminContract(name, target);
}

/** The admin listener over a service on the backend: force-release needs the token. */
function adminContract(name: string, target: ContractTarget): void {
  describe(`admin listener contract: ${name}`, () => {
    let a: LockService;
    const backends: LockBackend[] = [];
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const key = (): string => `admin-${run}-${++n}`;

    beforeAll(async () => {
      backends.push(...(await hostBackends(target, 1)));
      a = new LockService(backends[0]!, { node: "host-a" });
    });
    afterAll(async () => {
      await a?.close({ closeBackend: false });
      await closeBackends(backends);
    });

    it("admin listener: refuses force-release without the token, and does it with the token", async () => {
      const k = key();
      const lease = (await a.tryLock(k, { ttlMs: 30_000 }))!;
      const token = "contract-token-0123456789";
      const server = await startAdminServer({
        service: a,
        settings: { listen: { host: "127.0.0.1", port: 0 }, token },
        log: silent,
        node: "host-a",
      });
      try {
        const url = `${server.url}/locks/${encodeURIComponent(lease.name)}/force-release`;
        const none = await fetch(url, { method: "POST" });
        expect(none.status).toBe(401);
        const wrong = await fetch(url, { method: "POST", headers: { authorization: "Bearer wrong-token-0123456789" } });
        expect(wrong.status).toBe(403);
        expect((await a.status({ name: lease.name })).held).toBe(true);
        const ok = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` } });
        expect(ok.status).toBe(200);
        expect(await ok.json()).toMatchObject({ released: true });
        expect((await a.status({ name: lease.name })).held).toBe(false);
      } finally {
        await server.close();
      }
    });
  });
}
