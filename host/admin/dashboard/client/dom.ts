// Small DOM helpers. Every value from the host is set as text, never as HTML: lock names come
// from guests.

/** The element with `id`, checked to be of `type` (the page's markup and its code must agree). */
export function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`the page has no ${type.name} #${id}`);
  return element;
}

/** Appends a cell holding `text` to `row`. */
export function cell(row: HTMLTableRowElement, text: string, className?: string): HTMLTableCellElement {
  const td = row.insertCell();
  td.textContent = text;
  if (className !== undefined) td.className = className;
  return td;
}

/** Replaces a table body's rows by one spanning row that says `text`. */
export function emptyRow(tbody: HTMLTableSectionElement, columns: number, text: string): void {
  const row = tbody.insertRow();
  row.className = "empty";
  const td = row.insertCell();
  td.colSpan = columns;
  td.textContent = text;
}

/** A `<span class="badge ...">`, as the feeds show event types. */
export function badge(text: string, className: string): HTMLSpanElement {
  const span = document.createElement("span");
  span.className = `badge ${className}`;
  span.textContent = text;
  return span;
}

/** The first body of `table`. */
export function bodyOf(table: HTMLTableElement): HTMLTableSectionElement {
  return table.tBodies[0] ?? table.createTBody();
}
