// The admin dashboard in a real browser: Chromium from the system's packages (no browser
// download), driven by playwright-core. A guest takes a lock and the page shows it live; a
// force-release asks first, is refused without the admin token and goes with it, each attempt an
// audit line in the activity feed and the log; 250 locks of every kind are filtered by kind,
// sorted and paged to the last page; the charts' axes read as numbers with units; and with its
// Redis down the page says so in a banner and stops saying "live". No page raises a console
// error or meets a 404 it did not ask for. Screenshots go to a temporary folder of the test's
// own (a test writes nothing into the tracked tree); `npm run screenshot` refreshes
// docs/dashboard.png, which docs/operators.md shows, on purpose.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import type { Lease } from "../host/locking/lease.js";
import type { Leadership } from "../host/locking/election.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { startRedisServer, type RedisServer } from "./support/servers.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const FOR_DOCS = process.env.LOCKHOST_SCREENSHOT === "docs";
const SHOTS = mkdtempSync(join(tmpdir(), "lockhost-dashboard-"));
const screenshot = (name: string): string =>
  FOR_DOCS && name === "dashboard" ? fileURLToPath(new URL("../docs/dashboard.png", import.meta.url)) : join(SHOTS, `${name}.png`);
const TOKEN = "dashboard-test-token-0123";
const POLL = { timeout: 10_000 };

let host: Host;
let log: ReturnType<typeof captureLogger>;
let browser: Browser;
let page: Page;
/** What went wrong on a page: console errors, uncaught errors, and responses of 400 and above. */
interface Trouble {
  readonly errors: string[];
  readonly failed: string[];
}
const troubles = new Map<Page, Trouble>();

/** A page that records its trouble. */
async function openPage(url: string): Promise<Page> {
  const p = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const trouble: Trouble = { errors: [], failed: [] };
  troubles.set(p, trouble);
  p.on("console", (m) => void (m.type() === "error" && trouble.errors.push(m.text())));
  p.on("pageerror", (e) => void trouble.errors.push(`uncaught: ${e.message}`));
  p.on("response", (r) => void (r.status() >= 400 && trouble.failed.push(`${r.status()} ${new URL(r.url()).pathname}`)));
  await p.goto(`${url}/dashboard`);
  return p;
}

/** Takes the trouble recorded so far off `p`, for a test to compare with what it caused. */
function takeTrouble(p: Page): Trouble {
  const t = troubles.get(p)!;
  const taken = { errors: t.errors.splice(0), failed: t.failed.splice(0) };
  return taken;
}

/** A refused request shows in the console as a failed resource; only those the test caused are expected. */
const refusedResource = (status: number): string => `Failed to load resource: the server responded with a status of ${status}`;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Chromium from the system's packages (Debian: apt-get install chromium), or set CHROMIUM_PATH`);
  }
  log = captureLogger();
  host = await Host.start(
    resolveConfig({
      host: { node: "node-a" },
      admin: { listen: "127.0.0.1:0", token: TOKEN },
      plugins: [
        { name: "billing", wasm: guestWasm("locker") },
        { name: "report", wasm: guestWasm("report", "example") },
      ],
      scheduled: [{ plugin: "report", export: "run", schedule: "1s" }],
    }),
    { logger: log.logger },
  );
  host.scheduler.start();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As the machine notes say: no sandbox as root, and nothing that reaches for the network.
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  page = await openPage(host.admin!.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await host?.stop(2_000);
  rmSync(SHOTS, { recursive: true, force: true });
});

const row = (name: string) => page.locator("#locks tbody tr", { hasText: name });
const feedRows = (text: string) => page.locator("#feed tbody tr", { hasText: text });
const texts = (selector: string) => page.locator(selector).allTextContents();

describe("the admin dashboard, in Chromium", () => {
  it("shows a lock a guest takes and its release live, and refuses force-release without the token", async () => {
    await expect.poll(() => page.locator("#live").textContent(), POLL).toBe("live");
    expect(await page.locator("#where").textContent()).toContain("node node-a · backend memory");
    expect(await page.locator("#banner").isVisible()).toBe(false);

    // A guest takes a lock that outlives its call: the page lists it without a reload.
    const h = (await host.call("billing", "hold", [7, 60_000, S.FLAG_KEEP])) as number;
    expect(h).toBeGreaterThan(0);
    await expect.poll(() => row("billing:k7").count(), POLL).toBe(1);
    expect(await row("billing:k7").locator("td").nth(1).textContent()).toBe("mutex");
    expect(await row("billing:k7").locator("td").nth(2).textContent()).toBe("billing @ node-a");
    await expect.poll(() => feedRows("billing:k7").count(), POLL).toBeGreaterThan(0);

    // Without the token the listener refuses (after the operator confirmed), and the lock stays.
    await row("billing:k7").locator("button").click();
    await page.locator("#confirm-ok").click();
    await expect.poll(() => page.locator("#message").textContent(), POLL).toContain("force-release refused (401)");
    expect((await host.locks.status({ name: "billing:k7" })).held).toBe(true);
    // The refusal is audited: who tried, without a token.
    await expect.poll(() => feedRows("without a token").filter({ hasText: "billing:k7" }).count(), POLL).toBe(1);
    expect(takeTrouble(page)).toEqual({ errors: [expect.stringContaining(refusedResource(401))], failed: ["401 /locks/billing%3Ak7/force-release"] });

    // A schedule has run by now, and the plots have data.
    await expect.poll(() => page.locator("#ticks tbody tr", { hasText: "report.run" }).count(), POLL).toBeGreaterThan(0);
    // The counters follow the events: the card counts the guest's lock (and a schedule's, while one runs).
    await expect.poll(async () => Number(await page.locator("#c-held").textContent()), POLL).toBeGreaterThanOrEqual(1);
    await page.screenshot({ path: screenshot("dashboard") });

    // The guest releases it: gone from the list, "released" in the activity feed.
    expect(await host.call("billing", "release", [h])).toBe(S.OK);
    await expect.poll(() => row("billing:k7").count(), POLL).toBe(0);
    await expect.poll(() => feedRows("released").filter({ hasText: "billing:k7" }).count(), POLL).toBeGreaterThan(0);
  });

  it("asks before a force-release; with the admin token the lock goes, the holder hears of it, and the audit line names who, when and which lock", async () => {
    const h = (await host.call("billing", "hold", [8, 60_000, S.FLAG_KEEP])) as number;
    await expect.poll(() => row("billing:k8").count(), POLL).toBe(1);
    await page.locator("#token").fill(TOKEN);

    // Cancelled: nothing is sent, the lock stays.
    await row("billing:k8").locator("button").click();
    expect(await page.locator("#confirm").isVisible()).toBe(true);
    expect(await page.locator("#confirm-text").textContent()).toContain("Force-release the mutex billing:k8, held by billing @ node-a");
    await page.locator("#confirm-cancel").click();
    expect(await page.locator("#confirm").isVisible()).toBe(false);
    expect((await host.locks.status({ name: "billing:k8" })).held).toBe(true);

    // Confirmed: released.
    const before = Date.now();
    await row("billing:k8").locator("button").click();
    await page.locator("#confirm-ok").click();
    await expect.poll(() => page.locator("#message").textContent(), POLL).toBe("force-released billing:k8");
    await expect.poll(() => row("billing:k8").count(), POLL).toBe(0);
    await expect.poll(() => feedRows("force-released").count(), POLL).toBeGreaterThan(0);
    expect((await host.locks.status({ name: "billing:k8" })).held).toBe(false);
    expect(await host.call("billing", "release", [h])).toBe(-S.LOST);

    // The audit line, in the feed and in the log: once (the cancelled attempt sent nothing).
    const audit = feedRows("force-release by 127.0.0.1 with the admin token: released (1 holder)").filter({ hasText: "billing:k8" });
    await expect.poll(() => audit.count(), POLL).toBe(1);
    expect(await audit.locator("td").nth(1).textContent()).toBe("audit");
    const logged = log.lines.filter((l) => l.audit === "force-release" && l.lock === "billing:k8");
    expect(logged).toEqual([
      expect.objectContaining({
        level: 40,
        msg: "lock force-released through the admin listener",
        kind: "mutex",
        outcome: "released",
        holders: 1,
        from: "127.0.0.1",
        token: "valid",
      }),
    ]);
    expect(logged[0]!.time).toBeGreaterThanOrEqual(before);
    expect(JSON.stringify(log.lines)).not.toContain(TOKEN);
  });

  it("lists 250 locks of every kind: filtered by kind, sorted by any column, paged to the last page", { timeout: 90_000 }, async () => {
    const L = host.locks;
    const opts = { ttlMs: 120_000, plugin: "mix" };
    const leases: Lease[] = [];
    const leaders: Leadership[] = [];
    const name = (i: number): string => `mix/${String(i).padStart(3, "0")}`;
    for (let i = 0; i < 100; i++) leases.push((await L.try(name(i), opts))!);
    for (let i = 100; i < 150; i++) leases.push((await L.try(name(i), { ...opts, kind: "rw", mode: i % 2 === 0 ? "shared" : "exclusive" }))!);
    for (let i = 150; i < 190; i++) leases.push((await L.try(name(i), { ...opts, kind: "semaphore", permits: 3 }))!);
    for (let i = 190; i < 220; i++) leases.push((await L.try(name(i), { ...opts, kind: "fair" }))!);
    for (let i = 220; i < 250; i++) leaders.push(await L.campaign(name(i), { ttlMs: 120_000, plugin: "mix" }));
    expect(leases.every(Boolean)).toBe(true);
    try {
      await page.locator("#filter").fill("global:mix/");
      await expect.poll(() => page.locator("#page-info").textContent(), POLL).toBe("1–200 of 250");
      expect(await page.locator("#locks tbody tr").count()).toBe(200);
      expect(new Set(await texts("#locks tbody td.kind"))).toEqual(new Set(["mutex", "rw", "semaphore", "fair"]));

      // Sorted by name (the default), the last page holds the last 50.
      await page.locator("#page-last").click();
      expect(await page.locator("#page-info").textContent()).toBe("201–250 of 250");
      const last = await texts("#locks tbody td.name");
      expect(last).toHaveLength(50);
      expect(last[0]).toBe("global:mix/200");
      expect(last.at(-1)).toBe("global:mix/249");
      expect(new Set(await texts("#locks tbody td.kind"))).toEqual(new Set(["fair", "leader"]));
      expect(await page.locator("#page-next").isDisabled()).toBe(true);
      await page.locator("#page-prev").click();
      expect(await page.locator("#page-info").textContent()).toBe("1–200 of 250");

      // Sorted by name, descending: the last lock first.
      await page.locator("#locks th[data-sort=name] button").click();
      expect(await page.locator("#locks th[data-sort=name]").getAttribute("aria-sort")).toBe("descending");
      expect((await texts("#locks tbody td.name"))[0]).toBe("global:mix/249");
      // By kind: in the kind table's order, mutexes first, leaders on the last page.
      await page.locator("#locks th[data-sort=kind] button").click();
      expect(await page.locator("#locks th[data-sort=kind]").getAttribute("aria-sort")).toBe("ascending");
      expect((await texts("#locks tbody td.kind"))[0]).toBe("mutex");
      await page.locator("#page-last").click();
      expect((await texts("#locks tbody td.kind")).at(-1)).toBe("leader");
      // By fence, descending: the newest acquisition first.
      await page.locator("#locks th[data-sort=fence] button").click();
      await page.locator("#locks th[data-sort=fence] button").click();
      const fences = (await texts("#locks tbody td:nth-child(4)")).map(Number);
      expect(fences).toEqual([...fences].sort((a, b) => b - a));

      // The kind filter asks the listener for one kind.
      await page.locator("#kind-filter").selectOption("semaphore");
      await expect.poll(() => page.locator("#page-info").textContent(), POLL).toBe("1–40 of 40");
      expect(new Set(await texts("#locks tbody td.kind"))).toEqual(new Set(["semaphore"]));
      await page.locator("#kind-filter").selectOption("rw");
      await expect.poll(() => page.locator("#page-info").textContent(), POLL).toBe("1–50 of 50");
      await page.locator("#kind-filter").selectOption("leader");
      await expect.poll(() => page.locator("#page-info").textContent(), POLL).toBe("1–30 of 30");
      await page.screenshot({ path: screenshot("kinds") });
    } finally {
      await page.locator("#kind-filter").selectOption("");
      await page.locator("#filter").fill("");
      for (const lease of leases) await L.release(lease);
      for (const leader of leaders) await leader.resign();
    }
  });

  it("draws hold-time and wait histograms, with axes that read as round numbers and units", async () => {
    const L = host.locks;
    // Waits that end: some acquired once the holder lets go, one timed out.
    for (let i = 0; i < 3; i++) {
      const held = (await L.tryLock(`hist/${i}`, { ttlMs: 10_000 }))!;
      const waiting = L.acquire(`hist/${i}`, { ttlMs: 10_000, waitMs: 5_000 });
      await new Promise((r) => setTimeout(r, 30 + 40 * i));
      await L.release(held);
      await L.release(await waiting);
    }
    const held = (await L.tryLock("hist/timeout", { ttlMs: 10_000 }))!;
    await expect(L.acquire("hist/timeout", { ttlMs: 10_000, waitMs: 120 })).rejects.toMatchObject({ code: "TIMEOUT" });
    await L.release(held);

    await expect.poll(async () => Number(await page.locator("#hist-wait").getAttribute("data-total")), POLL).toBeGreaterThanOrEqual(4);
    await expect.poll(async () => Number(await page.locator("#hist-held").getAttribute("data-total")), POLL).toBeGreaterThanOrEqual(6);
    const axis = async (id: string, which: "y" | "x"): Promise<string[]> =>
      ((await page.locator(`#${id}`).getAttribute(`data-${which}-ticks`)) ?? "").split(" | ");

    for (const id of ["hist-held", "hist-wait"]) {
      // Counts: whole numbers from 0, evenly spaced; durations along the bottom at 1-10-100 steps.
      const y = (await axis(id, "y")).map((t) => Number(t.replace(/,/g, "")));
      expect(y[0]).toBe(0);
      expect(y.every(Number.isInteger)).toBe(true);
      expect(new Set(y.slice(1).map((v, i) => v - y[i]!)).size).toBe(1);
      expect(await axis(id, "x")).toEqual(["1 ms", "10 ms", "100 ms", "1 s", "10 s", "1 min", "5 min"]);
    }
    // The wait plot: round milliseconds (no "1 / 1 / 0"), from 0 up past the longest wait (over 100 ms).
    const wait = await axis("plot-wait", "y");
    for (const tick of wait) expect(tick).toMatch(/^\d+(\.\d+)? (ms|s)$/);
    const ms = wait.map((t) => Number.parseFloat(t) * (t.endsWith(" s") ? 1000 : 1));
    expect(ms[0]).toBe(0);
    expect(ms.at(-1)).toBeGreaterThanOrEqual(110);
    expect(new Set(ms).size).toBe(ms.length);
    expect(ms).toEqual([...ms].sort((a, b) => a - b));
    expect(await axis("plot-wait", "x")).toEqual(["-5 min", "-4 min", "-3 min", "-2 min", "-1 min", "now"]);
    for (const tick of await axis("plot-acq", "y")) expect(tick).toMatch(/^\d+\/s$/);
  });

  it("raised no console error and met no 404 beyond what the tests caused; the favicon is served", async () => {
    expect(takeTrouble(page)).toEqual({ errors: [], failed: [] });
    expect((await fetch(`${host.admin!.url}/favicon.ico`)).status).toBe(200);
  });
});

describe("the dashboard while the backend is down", () => {
  let redis: RedisServer | undefined;
  let down: Host | undefined;
  afterEach(async () => {
    await down?.stop(1_000);
    await redis?.stop();
  });

  it("shows a red banner naming why, and not 'live'; both go when the backend answers again", async () => {
    redis = await startRedisServer();
    down = await Host.start(
      resolveConfig({
        host: { node: "node-r" },
        locking: { backend: "redis", redis: { url: redis.url, commandTimeoutMs: 300 } },
        admin: { listen: "127.0.0.1:0" },
      } as ConfigInput),
      { logger: captureLogger().logger },
    );
    const lease = (await down.locks.tryLock("outage/a", { ttlMs: 60_000 }))!;
    const p = await openPage(down.admin!.url);
    try {
      await expect.poll(() => p.locator("#live").textContent(), POLL).toBe("live");
      await expect.poll(() => p.locator("#locks tbody tr", { hasText: "global:outage/a" }).count(), POLL).toBe(1);
      expect(await p.locator("#banner").isVisible()).toBe(false);

      await redis.kill();
      await expect.poll(() => p.locator("#banner").isVisible(), POLL).toBe(true);
      const banner = await p.locator("#banner").textContent();
      expect(banner).toMatch(/^The redis backend is not answering \(since \d\d:\d\d:\d\d\): .+\. Locks cannot be taken/);
      expect(await p.locator("#live").textContent()).toBe("backend down");
      expect(await p.locator("#live").getAttribute("class")).toBe("pill off");
      // What /readyz says is what the banner says.
      const ready = (await (await fetch(`${down.admin!.url}/readyz`)).json()) as { ok: boolean; message: string };
      expect(ready.ok).toBe(false);
      expect(banner).toContain(ready.message.slice(0, 20));
      await p.screenshot({ path: screenshot("backend-down") });

      await redis.start();
      await expect.poll(() => p.locator("#banner").isVisible(), POLL).toBe(false);
      await expect.poll(() => p.locator("#live").textContent(), POLL).toBe("live");
      expect(await p.locator("#live").getAttribute("class")).toBe("pill on");
      // A listing that ran as the backend went down failed (503) and said so in the console; nothing else did.
      const trouble = takeTrouble(p);
      for (const error of trouble.errors) expect(error).toContain(refusedResource(503));
      for (const failed of trouble.failed) expect(failed).toMatch(/^503 \/locks\?/);
    } finally {
      await p.close();
      await down.locks.release(lease).catch(() => undefined);
    }
  });
});

describe("what the page offers follows the listener's access", () => {
  let other: Host | undefined;
  afterEach(async () => {
    await other?.stop(1_000);
    other = undefined;
  });

  it("without a token configured: locks are listed with no force-release button and no token field", async () => {
    other = await Host.start(resolveConfig({ host: { node: "node-open" }, admin: { listen: "127.0.0.1:0" } }), { logger: captureLogger().logger });
    const lease = (await other.locks.tryLock("open/a", { ttlMs: 60_000 }))!;
    const p = await openPage(other.admin!.url);
    try {
      await expect.poll(() => p.locator("#live").textContent(), POLL).toBe("live");
      const rowOf = p.locator("#locks tbody tr", { hasText: "global:open/a" });
      await expect.poll(() => rowOf.count(), POLL).toBe(1);
      expect(await rowOf.locator("button").count()).toBe(0);
      expect(await p.locator("#locks tbody button").count()).toBe(0);
      expect(await p.locator("#token-form").isVisible()).toBe(false);
      expect(takeTrouble(p)).toEqual({ errors: [], failed: [] });
    } finally {
      await p.close();
      await other.locks.release(lease);
    }
  });

  it('with auth = "all": the page asks for the token, then shows the host live with it, force-release included', async () => {
    other = await Host.start(resolveConfig({ host: { node: "node-all" }, admin: { listen: "127.0.0.1:0", token: TOKEN, auth: "all" } } as ConfigInput), {
      logger: captureLogger().logger,
    });
    const lease = (await other.locks.tryLock("all/a", { ttlMs: 60_000 }))!;
    const p = await openPage(other.admin!.url);
    try {
      await expect.poll(() => p.locator("#live").textContent(), POLL).toBe("admin token needed");
      expect(await p.locator("#token-form").isVisible()).toBe(true);
      expect(await p.locator("#message").textContent()).toContain("the listener refused (401)");
      // The page's own requests were refused for the token, and nothing else failed.
      const refused = takeTrouble(p);
      for (const failed of refused.failed) expect(failed).toMatch(/^401 \/(events|locks)/);
      await p.locator("#token").fill(TOKEN);
      await expect.poll(() => p.locator("#live").textContent(), POLL).toBe("live");
      const rowOf = p.locator("#locks tbody tr", { hasText: "global:all/a" });
      await expect.poll(() => rowOf.count(), POLL).toBe(1);
      expect(await p.locator("#where").textContent()).toContain("node node-all");
      // The feed is live with the token: a new lock shows without a reload.
      const later = (await other.locks.tryLock("all/b", { ttlMs: 60_000 }))!;
      await expect.poll(() => p.locator("#feed tbody tr", { hasText: "global:all/b" }).count(), POLL).toBeGreaterThan(0);
      // Force-release goes with the same token.
      await rowOf.locator("button").click();
      await p.locator("#confirm-ok").click();
      await expect.poll(() => p.locator("#message").textContent(), POLL).toBe("force-released global:all/a");
      expect((await other.locks.status({ name: "global:all/a" })).held).toBe(false);
      await other.locks.release(later);
      expect(takeTrouble(p).failed).toEqual([]);
    } finally {
      await p.close();
      await other.locks.release(lease).catch(() => undefined);
    }
  });
});
