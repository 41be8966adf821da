// The admin dashboard in a real browser: Chromium from the system's packages (no browser
// download), driven by playwright-core. A guest takes a lock and the page shows it live; a
// force-release without the admin token is refused; with it the lock goes; the guest's own
// release shows up in the activity feed. The test leaves its screenshot outside the tracked tree
// (a test writes nothing there); `npm run screenshot` refreshes docs/dashboard.png, which the
// README shows, on purpose.
import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { resolveConfig } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SCREENSHOT = process.env.LOCKHOST_SCREENSHOT === "docs" ? fileURLToPath(new URL("../docs/dashboard.png", import.meta.url)) : join(tmpdir(), `lockhost-dashboard-${process.pid}.png`);
const TOKEN = "dashboard-test-token-0123";

let host: Host;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Chromium from the system's packages (Debian: apt-get install chromium), or set CHROMIUM_PATH`);
  }
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
    { logger: captureLogger().logger },
  );
  host.scheduler.start();
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As the machine notes say: no sandbox as root, and nothing that reaches for the network.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
}, 60_000);

afterAll(async () => {
  if (process.env.LOCKHOST_SCREENSHOT !== "docs") rmSync(SCREENSHOT, { force: true });
  await browser?.close();
  await host?.stop(2_000);
});

const row = (name: string) => page.locator("#locks tbody tr", { hasText: name });

describe("the admin dashboard, in Chromium", () => {
  it("shows a lock a guest takes and its release live, and refuses force-release without the token", async () => {
    await page.goto(`${host.admin!.url}/dashboard`);
    await expect.poll(() => page.locator("#live").textContent(), { timeout: 10_000 }).toBe("live");
    expect(await page.locator("#where").textContent()).toContain("node node-a · backend memory");

    // A guest takes a lock that outlives its call: the page lists it without a reload.
    const h = (await host.call("billing", "hold", [7, 60_000, S.FLAG_KEEP])) as number;
    expect(h).toBeGreaterThan(0);
    await expect.poll(() => row("billing:k7").count(), { timeout: 10_000 }).toBe(1);
    expect(await row("billing:k7").locator("td").nth(1).textContent()).toBe("mutex");
    expect(await row("billing:k7").locator("td").nth(2).textContent()).toBe("billing @ node-a");
    await expect.poll(() => page.locator("#feed tbody tr", { hasText: "billing:k7" }).count(), { timeout: 10_000 }).toBeGreaterThan(0);

    // Without the token the listener refuses, and the lock stays.
    await row("billing:k7").locator("button").click();
    await expect.poll(() => page.locator("#message").textContent(), { timeout: 10_000 }).toContain("force-release refused (401)");
    expect((await host.locks.status({ name: "billing:k7" })).held).toBe(true);

    // A schedule has run by now, and the plots have data.
    await expect.poll(() => page.locator("#ticks tbody tr", { hasText: "report.run" }).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    // The counters follow the events: the card counts the guest's lock (and a schedule's, while one runs).
    await expect.poll(async () => Number(await page.locator("#c-held").textContent()), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    await page.screenshot({ path: SCREENSHOT });

    // The guest releases it: gone from the list, "released" in the activity feed.
    expect(await host.call("billing", "release", [h])).toBe(S.OK);
    await expect.poll(() => row("billing:k7").count(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => page.locator("#feed tbody tr", { hasText: "released" }).filter({ hasText: "billing:k7" }).count(), { timeout: 10_000 }).toBeGreaterThan(0);
  });

  it("force-releases with the admin token, and the holder hears of it", async () => {
    const h = (await host.call("billing", "hold", [8, 60_000, S.FLAG_KEEP])) as number;
    await expect.poll(() => row("billing:k8").count(), { timeout: 10_000 }).toBe(1);
    await page.locator("#token").fill(TOKEN);
    await row("billing:k8").locator("button").click();
    await expect.poll(() => page.locator("#message").textContent(), { timeout: 10_000 }).toBe("force-released billing:k8");
    await expect.poll(() => row("billing:k8").count(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => page.locator("#feed tbody tr", { hasText: "force-released" }).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    expect((await host.locks.status({ name: "billing:k8" })).held).toBe(false);
    expect(await host.call("billing", "release", [h])).toBe(-S.LOST);
  });
});
