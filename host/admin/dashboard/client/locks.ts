// The held-locks table: every kind, filtered by name prefix and kind, sorted by any column and
// paged. The listing API pages with a cursor in the backend's order; the table walks it to the
// end (up to MAX_LOADED rows) so that a sort orders every lock, not one page of them, and then
// shows PAGE_SIZE rows at a time.
import { bodyOf, byId, cell, emptyRow } from "./dom.js";
import { formatCount, formatMs } from "./format.js";
import { canForceRelease, tokenHeaders } from "./access.js";
import { forceRelease } from "./force-release.js";
import { KINDS, type ErrorBody, type Listing, type ListPage } from "./wire.js";

/** Rows shown at once. */
export const PAGE_SIZE = 200;
/** Rows loaded at most: beyond, the operator narrows the listing with the filters. */
export const MAX_LOADED = 5_000;
/** Rows per listing request (the API's largest page). */
const REQUEST_LIMIT = 1_000;
const COLUMNS = 8;
/** New rows that flash at most; more at once flash none. */
const MAX_FLASHING = 20;

/** The sortable columns, and how each orders two rows. */
const ORDER = {
  name: (a: Listing, b: Listing) => compareText(a.name, b.name),
  kind: (a: Listing, b: Listing) => KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind),
  holder: (a: Listing, b: Listing) => compareText(holderOf(a), holderOf(b)),
  fence: (a: Listing, b: Listing) => a.fence - b.fence,
  age: (a: Listing, b: Listing) => a.ageMs - b.ageMs,
  ttl: (a: Listing, b: Listing) => a.ttlRemainingMs - b.ttlRemainingMs,
  waiters: (a: Listing, b: Listing) => a.waiters - b.waiters,
} satisfies Record<string, (a: Listing, b: Listing) => number>;
type SortKey = keyof typeof ORDER;

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const holderOf = (lock: Listing): string => `${lock.holder.plugin} @ ${lock.holder.node}`;
/** A holding as the flash tells them apart: a new holder of a name is a new row. */
const idOf = (lock: Listing): string => `${lock.kind}#${lock.name}#${lock.fence}#${lock.holder.node}`;
const isSortKey = (key: string | undefined): key is SortKey => key !== undefined && key in ORDER;

/** The table, its filters, its sort and its pager. */
export class LocksView {
  #locks: readonly Listing[] = [];
  /** Whether the listing had more than MAX_LOADED rows. */
  #truncated = false;
  #skipped: readonly string[] = [];
  #sort: { key: SortKey; direction: 1 | -1 } = { key: "name", direction: 1 };
  #page = 0;
  /** The previous listing's rows, so that rows new since flash (and no row flashes for a sort, a page or the first listing). */
  #known: ReadonlySet<string> | undefined;
  #fresh: ReadonlySet<string> = new Set();
  #loading: Promise<void> | undefined;
  #again = false;
  #pending: ReturnType<typeof setTimeout> | undefined;
  /** While the backend is down the list is left as it was, dimmed (a listing would only fail). */
  #paused = false;

  readonly #table = byId("locks", HTMLTableElement);
  readonly #prefix = byId("filter", HTMLInputElement);
  readonly #kind = byId("kind-filter", HTMLSelectElement);
  readonly #note = byId("locks-note", HTMLElement);
  readonly #pageInfo = byId("page-info", HTMLElement);
  readonly #message = byId("message", HTMLElement);
  readonly #pager = {
    first: byId("page-first", HTMLButtonElement),
    prev: byId("page-prev", HTMLButtonElement),
    next: byId("page-next", HTMLButtonElement),
    last: byId("page-last", HTMLButtonElement),
  };

  constructor() {
    for (const kind of KINDS) this.#kind.add(new Option(kind, kind));
    this.#prefix.addEventListener("input", () => this.#filtered());
    this.#kind.addEventListener("change", () => this.#filtered());
    for (const th of this.#table.tHead?.rows[0]?.cells ?? []) {
      const key = th.dataset.sort;
      if (!isSortKey(key)) continue;
      const button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = th.textContent;
      th.replaceChildren(button);
      button.addEventListener("click", () => this.#sortBy(key));
    }
    const { first, prev, next, last } = this.#pager;
    first.addEventListener("click", () => this.#goTo(0));
    prev.addEventListener("click", () => this.#goTo(this.#page - 1));
    next.addEventListener("click", () => this.#goTo(this.#page + 1));
    last.addEventListener("click", () => this.#goTo(Number.MAX_SAFE_INTEGER));
  }

  /** Stops listing (the backend is down) or lists again at once (it is back). */
  pause(paused: boolean): void {
    if (paused === this.#paused) return;
    this.#paused = paused;
    this.#table.classList.toggle("stale", paused);
    if (!paused) void this.refresh();
  }

  /** Lists again shortly (events come in bursts: one listing per burst). */
  soon(): void {
    clearTimeout(this.#pending);
    this.#pending = setTimeout(() => void this.refresh(), 150);
  }

  /** Lists the locks again (joining a listing under way, and listing once more after it). */
  refresh(): Promise<void> {
    if (this.#paused) return Promise.resolve();
    if (this.#loading !== undefined) {
      this.#again = true;
      return this.#loading;
    }
    this.#loading = this.#load().finally(() => {
      this.#loading = undefined;
      if (this.#again) {
        this.#again = false;
        void this.refresh();
      }
    });
    return this.#loading;
  }

  /** Says `text` under the table (a force-release's outcome). */
  say(text: string): void {
    this.#message.textContent = text;
  }

  async #load(): Promise<void> {
    const query = new URLSearchParams({ limit: String(REQUEST_LIMIT) });
    if (this.#prefix.value !== "") query.set("prefix", this.#prefix.value);
    if (this.#kind.value !== "") query.set("kind", this.#kind.value);
    const locks: Listing[] = [];
    const skipped = new Set<string>();
    let cursor: string | undefined;
    try {
      do {
        if (cursor !== undefined) query.set("cursor", cursor);
        const res = await fetch(`/locks?${query.toString()}`, { headers: tokenHeaders() });
        const body = (await res.json()) as ListPage & ErrorBody;
        if (!res.ok) throw new Error(body.message ?? res.statusText);
        locks.push(...body.locks);
        for (const s of body.skipped ?? []) skipped.add(`${s.kind}: ${s.reason}`);
        cursor = body.cursor;
      } while (cursor !== undefined && locks.length < MAX_LOADED);
    } catch (err) {
      this.#note.textContent = `listing failed: ${err instanceof Error ? err.message : String(err)}`;
      this.#table.classList.add("stale");
      return;
    }
    this.#table.classList.remove("stale");
    this.#locks = locks.slice(0, MAX_LOADED);
    this.#truncated = cursor !== undefined || locks.length > MAX_LOADED;
    this.#skipped = [...skipped];
    const ids = new Set(this.#locks.map(idOf));
    const known = this.#known;
    const fresh = known === undefined ? [] : [...ids].filter((id) => !known.has(id));
    // A burst of new rows flashing tells nothing, and costs the browser every frame of the flash.
    this.#fresh = new Set(fresh.length <= MAX_FLASHING ? fresh : []);
    this.#known = ids;
    this.#render();
  }

  #filtered(): void {
    this.#page = 0;
    this.#known = undefined;
    this.soon();
  }

  #sortBy(key: SortKey): void {
    this.#sort = { key, direction: this.#sort.key === key ? (-this.#sort.direction as 1 | -1) : 1 };
    this.#page = 0;
    this.#render();
  }

  #goTo(page: number): void {
    this.#page = page;
    this.#render();
  }

  #render(): void {
    const { key, direction } = this.#sort;
    const order = ORDER[key];
    const sorted = [...this.#locks].sort((a, b) => direction * order(a, b) || compareText(a.name, b.name) || a.fence - b.fence);
    const pages = Math.max(1, Math.ceil(sorted.length / PAGE_SIZE));
    this.#page = Math.min(Math.max(0, this.#page), pages - 1);
    const from = this.#page * PAGE_SIZE;
    const shown = sorted.slice(from, from + PAGE_SIZE);

    for (const th of this.#table.tHead?.rows[0]?.cells ?? []) {
      if (th.dataset.sort === undefined) continue;
      th.setAttribute("aria-sort", th.dataset.sort === key ? (direction === 1 ? "ascending" : "descending") : "none");
    }
    const tbody = bodyOf(this.#table);
    tbody.replaceChildren();
    for (const lock of shown) this.#row(tbody, lock, this.#fresh.has(idOf(lock)));
    this.#fresh = new Set();
    if (shown.length === 0) {
      const filtered = this.#prefix.value !== "" || this.#kind.value !== "";
      emptyRow(tbody, COLUMNS, filtered ? "no lock held that matches the filters" : "no lock held");
    }

    const total = sorted.length;
    this.#pageInfo.textContent =
      total === 0 ? "" : `${formatCount(from + 1)}–${formatCount(from + shown.length)} of ${formatCount(total)}${this.#truncated ? "+" : ""}`;
    this.#pager.first.disabled = this.#pager.prev.disabled = this.#page === 0;
    this.#pager.next.disabled = this.#pager.last.disabled = this.#page >= pages - 1;
    const notes = [
      ...(this.#truncated ? [`more than ${formatCount(MAX_LOADED)} held: the first ${formatCount(MAX_LOADED)} are loaded; narrow them with the filters`] : []),
      ...this.#skipped.map((s) => `not listed: ${s}`),
    ];
    this.#note.textContent = notes.join("; ");
  }

  #row(tbody: HTMLTableSectionElement, lock: Listing, fresh: boolean): void {
    const row = tbody.insertRow();
    if (fresh) row.className = "fresh";
    row.dataset.lock = lock.name;
    row.dataset.kind = lock.kind;
    cell(row, lock.name, "name");
    cell(row, lock.kind, `kind ${lock.kind}`).title = lock.mode;
    cell(row, holderOf(lock));
    cell(row, String(lock.fence));
    cell(row, formatMs(lock.ageMs));
    const bar = document.createElement("div");
    bar.className = "bar";
    const fill = document.createElement("span");
    const pct = Math.max(2, Math.min(100, (100 * lock.ttlRemainingMs) / lock.ttlMs));
    fill.style.width = `${pct}%`;
    if (pct < 25) fill.className = "low";
    bar.appendChild(fill);
    bar.title = `${formatMs(lock.ttlRemainingMs)} of ${formatMs(lock.ttlMs)}`;
    row.insertCell().appendChild(bar);
    cell(row, String(lock.waiters));
    // Without a token configured the listener refuses every force-release: no button offers one.
    if (!canForceRelease()) return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "danger";
    button.textContent = "force-release";
    button.addEventListener("click", () => {
      void forceRelease(lock).then((said) => {
        if (said === undefined) return;
        this.say(said);
        void this.refresh();
      });
    });
    row.insertCell().appendChild(button);
  }
}
