// The dashboard's page, stylesheet and script, served by the admin listener (dashboard.ts).
// Plain DOM and canvas, no framework: the page is small, and it must load from a host with no
// internet access. Every value from the host is set as text, never as HTML (lock names come
// from guests).

/** GET /dashboard (and /). */
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockhost</title>
<link rel="stylesheet" href="/dashboard.css">
<script src="/dashboard.js" defer></script>
</head>
<body>
<header>
  <h1>lockhost</h1>
  <span id="where" class="muted">connecting…</span>
  <span id="live" class="pill off" title="live feed">offline</span>
  <label class="token">admin token <input id="token" type="password" autocomplete="off" placeholder="for force-release"></label>
</header>
<main>
  <section class="cards">
    <div class="card"><div class="label">held here</div><div class="value" id="c-held">–</div></div>
    <div class="card"><div class="label">waiting here</div><div class="value" id="c-waiting">–</div></div>
    <div class="card"><div class="label">acquired / s (10 s)</div><div class="value" id="c-rate">–</div></div>
    <div class="card"><div class="label">contended</div><div class="value" id="c-contended">–</div></div>
    <div class="card"><div class="label">renewals ok / failed</div><div class="value" id="c-renew">–</div></div>
    <div class="card"><div class="label">lost</div><div class="value" id="c-lost">–</div></div>
  </section>
  <section class="panel wide">
    <h2>Held locks <span class="muted" id="locks-note"></span></h2>
    <div class="filters"><input id="filter" placeholder="name prefix, e.g. billing:" autocomplete="off"></div>
    <table id="locks"><thead><tr><th>lock</th><th>kind</th><th>holder</th><th>fence</th><th>age</th><th>TTL left</th><th>waiters</th><th></th></tr></thead><tbody></tbody></table>
    <div id="message" class="message" role="status"></div>
  </section>
  <section class="panel"><h2>Acquisitions per second <span class="muted">last 5 min</span></h2><canvas id="plot-acq" height="140"></canvas></section>
  <section class="panel"><h2>Wait time, ms <span class="muted">mean and longest per second</span></h2><canvas id="plot-wait" height="140"></canvas></section>
  <section class="panel"><h2>By plugin</h2>
    <table id="plugins"><thead><tr><th>plugin</th><th>acquired</th><th>released</th><th>lost</th><th>waits</th><th>timeouts</th></tr></thead><tbody></tbody></table>
  </section>
  <section class="panel"><h2>Schedule runs</h2>
    <table id="ticks"><thead><tr><th>time</th><th>schedule</th><th>outcome</th><th>fence</th></tr></thead><tbody></tbody></table>
  </section>
  <section class="panel wide"><h2>Activity</h2>
    <table id="feed"><thead><tr><th>time</th><th>event</th><th>lock</th><th>fence</th><th>plugin</th><th>detail</th></tr></thead><tbody></tbody></table>
  </section>
</main>
</body>
</html>
`;

/** GET /dashboard.css */
export const PAGE_CSS = `
:root { --bg: #0f1419; --panel: #171e26; --line: #26313d; --text: #d8dee6; --muted: #7d8a99; --accent: #4fb3ff;
  --ok: #3fcf8e; --warn: #f2b84b; --bad: #ff6b6b; color-scheme: dark; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text); font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
header { display: flex; align-items: center; gap: 16px; padding: 12px 20px; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 18px; margin: 0; letter-spacing: .5px; }
h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); margin: 0 0 10px; font-weight: 600; }
.muted { color: var(--muted); font-weight: 400; text-transform: none; letter-spacing: 0; }
.pill { padding: 2px 10px; border-radius: 999px; font-size: 12px; border: 1px solid var(--line); }
.pill.on { color: var(--ok); border-color: var(--ok); }
.pill.off { color: var(--bad); border-color: var(--bad); }
.token { margin-left: auto; color: var(--muted); font-size: 12px; }
input { background: var(--bg); color: var(--text); border: 1px solid var(--line); border-radius: 6px; padding: 5px 8px; font: inherit; }
main { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 16px; padding: 16px 20px; }
.cards { grid-column: 1 / -1; display: grid; grid-template-columns: repeat(6, minmax(0, 1fr)); gap: 12px; }
.card, .panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 24px; font-variant-numeric: tabular-nums; margin-top: 4px; }
.wide { grid-column: 1 / -1; }
table { width: 100%; border-collapse: collapse; font-variant-numeric: tabular-nums; }
th { text-align: left; color: var(--muted); font-weight: 500; font-size: 12px; border-bottom: 1px solid var(--line); padding: 4px 6px; }
td { padding: 5px 6px; border-bottom: 1px solid #1d2630; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 360px; }
td.name { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
tr.fresh td { animation: flash 1.2s ease-out; }
@keyframes flash { from { background: #1f3b52; } to { background: transparent; } }
.bar { height: 6px; background: var(--line); border-radius: 3px; min-width: 80px; }
.bar > span { display: block; height: 100%; border-radius: 3px; background: var(--ok); }
.badge { display: inline-block; padding: 0 8px; border-radius: 4px; font-size: 12px; background: #223040; }
.badge.acquired { color: var(--ok); } .badge.released { color: var(--accent); } .badge.lost, .badge.force-released { color: var(--bad); }
.badge.waited { color: var(--warn); } .badge.tick { color: var(--muted); }
button { background: transparent; color: var(--bad); border: 1px solid var(--bad); border-radius: 6px; padding: 2px 8px; cursor: pointer; font: inherit; font-size: 12px; }
button:hover { background: #3a1d22; }
.filters { margin-bottom: 8px; }
.message { min-height: 20px; margin-top: 8px; color: var(--warn); }
canvas { width: 100%; display: block; }
.empty td { color: var(--muted); text-align: center; }
`;

/** GET /dashboard.js */
export const PAGE_JS = `"use strict";
const $ = (id) => document.getElementById(id);
const state = { series: [], plugins: {}, stats: null, node: "", backend: "" };
const tokenInput = $("token");
tokenInput.value = sessionStorage.getItem("lockhost-token") || "";
tokenInput.addEventListener("input", () => sessionStorage.setItem("lockhost-token", tokenInput.value));

function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td; }
function fmtMs(ms) { if (ms < 1000) return ms + " ms"; const s = ms / 1000; if (s < 120) return s.toFixed(1) + " s"; return (s / 60).toFixed(1) + " min"; }
function fmtTime(ms) { return new Date(ms).toLocaleTimeString(); }
function empty(tbody, cols, text) { const r = tbody.insertRow(); r.className = "empty"; const td = r.insertCell(); td.colSpan = cols; td.textContent = text; }

let known = new Set();
async function refreshLocks() {
  const prefix = $("filter").value;
  const q = new URLSearchParams({ limit: "200" });
  if (prefix) q.set("prefix", prefix);
  let page;
  try {
    const res = await fetch("/locks?" + q);
    page = await res.json();
    if (!res.ok) throw new Error(page.message || res.statusText);
  } catch (err) { $("locks-note").textContent = "listing failed: " + err.message; return; }
  const tbody = $("locks").tBodies[0];
  tbody.replaceChildren();
  const now = new Set();
  for (const l of page.locks) {
    const id = l.kind + "#" + l.name + "#" + l.fence;
    now.add(id);
    const r = tbody.insertRow();
    if (!known.has(id)) r.className = "fresh";
    r.dataset.lock = l.name;
    r.dataset.kind = l.kind;
    cell(r, l.name, "name");
    cell(r, l.kind, "kind");
    cell(r, l.holder.plugin + " @ " + l.holder.node);
    cell(r, String(l.fence));
    cell(r, fmtMs(l.ageMs));
    const ttl = r.insertCell(); const bar = document.createElement("div"); bar.className = "bar";
    const fill = document.createElement("span"); const pct = Math.max(2, Math.min(100, 100 * l.ttlRemainingMs / l.ttlMs));
    fill.style.width = pct + "%"; if (pct < 25) fill.style.background = "var(--warn)"; bar.appendChild(fill);
    bar.title = fmtMs(l.ttlRemainingMs) + " of " + fmtMs(l.ttlMs); ttl.appendChild(bar);
    cell(r, String(l.waiters));
    const b = document.createElement("button"); b.textContent = "force-release"; b.onclick = () => forceRelease(l.name, l.kind);
    r.insertCell().appendChild(b);
  }
  known = now;
  if (page.locks.length === 0) empty(tbody, 8, prefix ? "no lock held under this prefix" : "no lock held");
  $("locks-note").textContent = page.cursor ? "(first 200 shown)" : "";
}

// The kind goes along: each kind has its own names, so the row's lock is released and no other.
async function forceRelease(name, kind) {
  const headers = {};
  if (tokenInput.value) headers.authorization = "Bearer " + tokenInput.value;
  const res = await fetch("/locks/" + encodeURIComponent(name) + "/force-release?kind=" + encodeURIComponent(kind), { method: "POST", headers });
  const body = await res.json().catch(() => ({}));
  $("message").textContent = res.ok
    ? (body.released ? "force-released " + name : name + " was not held")
    : "force-release refused (" + res.status + "): " + (body.message || res.statusText);
  refreshLocks();
}

function renderStats() {
  const s = state.stats; if (!s) return;
  $("c-held").textContent = s.held; $("c-waiting").textContent = s.waiters;
  $("c-contended").textContent = s.contended; $("c-renew").textContent = s.renewalsOk + " / " + s.renewalsFailed;
  $("c-lost").textContent = s.lost;
  const nowSec = Math.floor(Date.now() / 1000);
  const last10 = state.series.filter((p) => p.second > nowSec - 10).reduce((n, p) => n + p.acquired, 0);
  $("c-rate").textContent = (last10 / 10).toFixed(1);
}

function renderPlugins() {
  const tbody = $("plugins").tBodies[0]; tbody.replaceChildren();
  const names = Object.keys(state.plugins).sort();
  for (const name of names) {
    const c = state.plugins[name]; const r = tbody.insertRow();
    cell(r, name, "name"); cell(r, String(c.acquired)); cell(r, String(c.released)); cell(r, String(c.lost)); cell(r, String(c.waits)); cell(r, String(c.timeouts));
  }
  if (names.length === 0) empty(tbody, 6, "nothing yet");
}

function addFeed(item, fresh) {
  if (item.type === "tick") return addTick(item, fresh);
  const tbody = $("feed").tBodies[0];
  if (tbody.rows[0] && tbody.rows[0].className === "empty") tbody.deleteRow(0);
  const r = tbody.insertRow(0); if (fresh) r.className = "fresh";
  cell(r, fmtTime(item.atMs));
  const b = document.createElement("span"); b.className = "badge " + item.type; b.textContent = item.type; r.insertCell().appendChild(b);
  cell(r, item.name, "name"); cell(r, item.fence === undefined ? "" : String(item.fence)); cell(r, item.plugin || "");
  cell(r, item.type === "lost" ? item.reason : item.type === "released" ? "held " + fmtMs(item.heldMs)
    : item.type === "waited" ? item.outcome + " after " + fmtMs(item.waitedMs) : item.type === "acquired" ? "TTL " + fmtMs(item.ttlMs) : "");
  while (tbody.rows.length > 60) tbody.deleteRow(tbody.rows.length - 1);
}

function addTick(item, fresh) {
  const tbody = $("ticks").tBodies[0];
  if (tbody.rows[0] && tbody.rows[0].className === "empty") tbody.deleteRow(0);
  const r = tbody.insertRow(0); if (fresh) r.className = "fresh";
  cell(r, fmtTime(item.tickAtMs)); cell(r, item.id, "name"); cell(r, item.outcome); cell(r, item.fence === undefined ? "" : String(item.fence));
  while (tbody.rows.length > 20) tbody.deleteRow(tbody.rows.length - 1);
}

function count(item) {
  const bump = (plugin, field) => { const c = state.plugins[plugin] || (state.plugins[plugin] = { acquired: 0, released: 0, lost: 0, waits: 0, timeouts: 0 }); c[field]++; };
  const sec = Math.floor(item.atMs / 1000);
  let p = state.series[state.series.length - 1];
  if (item.type === "acquired" || item.type === "waited") {
    if (!p || p.second !== sec) { p = { second: sec, acquired: 0, waits: 0, waitMsTotal: 0, waitMsMax: 0 }; state.series.push(p); }
  }
  if (item.type === "acquired" || item.type === "released" || item.type === "lost") bump(item.plugin, item.type);
  if (item.type === "acquired") p.acquired++;
  if (item.type === "waited") {
    p.waits++; p.waitMsTotal += item.waitedMs; p.waitMsMax = Math.max(p.waitMsMax, item.waitedMs);
    const plugin = item.name.split(":")[0]; bump(plugin, "waits"); if (item.outcome === "timeout") bump(plugin, "timeouts");
  }
}

function plot(canvas, lines) {
  const ratio = window.devicePixelRatio || 1; const w = canvas.clientWidth, h = canvas.clientHeight || 140;
  canvas.width = w * ratio; canvas.height = h * ratio; const g = canvas.getContext("2d"); g.scale(ratio, ratio);
  g.clearRect(0, 0, w, h);
  const nowSec = Math.floor(Date.now() / 1000), span = 300, pad = 28;
  const max = Math.max(1, ...lines.flatMap((l) => l.points.map((p) => p[1])));
  g.strokeStyle = "#26313d"; g.fillStyle = "#7d8a99"; g.font = "11px system-ui"; g.lineWidth = 1;
  for (let i = 0; i <= 2; i++) { const y = 8 + (h - 24) * i / 2; g.beginPath(); g.moveTo(pad, y); g.lineTo(w, y); g.stroke();
    g.fillText(String(Math.round(max * (1 - i / 2))), 0, y + 4); }
  g.fillText("-5 min", pad, h - 2); g.fillText("now", w - 22, h - 2);
  for (const line of lines) {
    g.strokeStyle = line.color; g.lineWidth = 1.6; g.beginPath(); let started = false;
    for (let s = nowSec - span; s <= nowSec; s++) {
      const v = line.byS.get(s) || 0; const x = pad + (w - pad) * (s - (nowSec - span)) / span; const y = 8 + (h - 24) * (1 - v / max);
      if (!started) { g.moveTo(x, y); started = true; } else g.lineTo(x, y);
    }
    g.stroke();
  }
}

function renderPlots() {
  const nowSec = Math.floor(Date.now() / 1000);
  state.series = state.series.filter((p) => p.second > nowSec - 300);
  const line = (color, f) => { const points = state.series.map((p) => [p.second, f(p)]); return { color, points, byS: new Map(points) }; };
  plot($("plot-acq"), [line("#3fcf8e", (p) => p.acquired)]);
  plot($("plot-wait"), [line("#4fb3ff", (p) => (p.waits ? p.waitMsTotal / p.waits : 0)), line("#f2b84b", (p) => p.waitMsMax)]);
}

let pending;
function soon() { clearTimeout(pending); pending = setTimeout(refreshLocks, 150); }

function connect() {
  const es = new EventSource("/events");
  es.addEventListener("snapshot", (e) => {
    const s = JSON.parse(e.data);
    state.node = s.node; state.backend = s.backend; state.stats = s.stats; state.series = s.feed.series; state.plugins = s.feed.plugins;
    $("where").textContent = "node " + s.node + " · backend " + s.backend + (s.distributed ? " (shared)" : " (this process)");
    $("feed").tBodies[0].replaceChildren(); $("ticks").tBodies[0].replaceChildren();
    empty($("feed").tBodies[0], 6, "waiting for activity"); empty($("ticks").tBodies[0], 4, "no schedule has run yet");
    for (const item of s.feed.recent) addFeed(item, false);
    renderStats(); renderPlugins(); renderPlots(); refreshLocks();
  });
  es.addEventListener("item", (e) => { const item = JSON.parse(e.data); count(item); addFeed(item, true); renderPlugins(); renderStats(); soon(); });
  es.addEventListener("stats", (e) => { state.stats = JSON.parse(e.data); renderStats(); });
  es.onopen = () => { $("live").textContent = "live"; $("live").className = "pill on"; };
  es.onerror = () => { $("live").textContent = "reconnecting"; $("live").className = "pill off"; };
}

$("filter").addEventListener("input", soon);
setInterval(renderPlots, 1000);
setInterval(refreshLocks, 3000);
connect();
`;
