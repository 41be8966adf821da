// The dashboard's entry: connects to the listener's live feed (/events, stream.ts) and keeps every part of
// the page current. Loaded as a module by index.html; nothing on the page runs inline (CSP).
import { addActivity, resetActivity } from "./activity.js";
import { askForToken, keepToken, onAccessChange, setAccess, tokenHeaders } from "./access.js";
import { byId } from "./dom.js";
import { HealthView } from "./health.js";
import { LocksView } from "./locks.js";
import { EventStream } from "./stream.js";
import { count, renderCharts, renderPlugins, renderStats, seed, setStats } from "./numbers.js";
import type { FeedItem, Health, Snapshot, Stats } from "./wire.js";

const CHARTS_EVERY_MS = 1_000;
const LOCKS_EVERY_MS = 3_000;

const health = new HealthView();
const locks = new LocksView();
keepToken();

function onHealth(now: Health): void {
  health.health(now);
  locks.pause(health.down);
}

const handlers = new Map<string, (data: string) => void>();
const on = <T>(name: string, handle: (data: T) => void): void => void handlers.set(name, (data) => handle(JSON.parse(data) as T));
on<Snapshot>("snapshot", (s) => {
  byId("where", HTMLElement).textContent = `node ${s.node} · backend ${s.backend}${s.distributed ? " (shared)" : " (this process)"}`;
  setAccess(s.access);
  seed(s);
  resetActivity();
  for (const item of s.feed.recent) addActivity(item, false);
  if (s.health !== undefined) onHealth(s.health);
  renderStats();
  renderPlugins();
  renderCharts();
  void locks.refresh();
});
on<FeedItem>("item", (item) => {
  count(item);
  addActivity(item, true);
  renderPlugins();
  renderStats();
  if (item.type !== "tick") locks.soon();
});
on<Stats>("stats", (s) => {
  setStats(s);
  renderStats();
});
on<Health>("health", onHealth);

const events = new EventStream("/events", {
  headers: tokenHeaders,
  event: (name, data) => handlers.get(name)?.(data),
  open: () => health.connection("open"),
  lost: () => health.connection("reconnecting"),
  refused: (status, message) => {
    health.connection("token");
    askForToken(message);
    locks.say(`the listener refused (${status}): ${message}`);
  },
});
// A token typed (or changed) may open what was refused, and list with force-release buttons.
onAccessChange(() => {
  events.retry();
  void locks.refresh();
});

setInterval(renderCharts, CHARTS_EVERY_MS);
setInterval(() => void locks.refresh(), LOCKS_EVERY_MS);
events.retry();
