// The charts, drawn on canvas: per-second lines over the last minutes, and duration histograms.
// Each canvas also carries its axes' labels as data attributes and an aria-label, for screen
// readers and for the tests (a canvas's text cannot be read back).
import { countScale, timeTicks, type Axis, type Scale } from "./axes.js";
import { bucketLabel, edgeTicks } from "./histogram.js";
import { formatCount } from "./format.js";

const COLORS = { grid: "#26313d", text: "#7d8a99" };
const FONT = "11px system-ui, sans-serif";
/** Room under the plot for the x labels, and above it for the top label. */
const BOTTOM = 18;
const TOP = 8;

/** One line of a per-second plot: its value at each second (absent seconds are 0). */
export interface Line {
  readonly color: string;
  readonly label: string;
  readonly bySecond: ReadonlyMap<number, number>;
}

/** What one chart shows: its y axis labelled with `unit`. */
interface Frame {
  readonly g: CanvasRenderingContext2D;
  readonly width: number;
  readonly height: number;
  /** Left edge of the plot area (after the y labels). */
  readonly left: number;
  readonly axis: Axis;
  readonly y: (value: number) => number;
}

/** Sizes the canvas for the screen, draws the y axis (gridlines and labels) and returns the frame. */
function frame(canvas: HTMLCanvasElement, { axis, labels }: Scale): Frame {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight || 140;
  // Resized only when the layout changed (a resize reallocates the canvas); setTransform, not scale, as the context persists.
  if (canvas.width !== width * ratio) canvas.width = width * ratio;
  if (canvas.height !== height * ratio) canvas.height = height * ratio;
  const g = canvas.getContext("2d");
  if (g === null) throw new Error("no 2d canvas");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  g.font = FONT;
  const left = Math.ceil(Math.max(...labels.map((text) => g.measureText(text).width))) + 8;
  const y = (value: number): number => TOP + (height - TOP - BOTTOM) * (1 - value / axis.max);
  g.lineWidth = 1;
  axis.ticks.forEach((tick, i) => {
    const at = Math.round(y(tick)) + 0.5;
    g.strokeStyle = COLORS.grid;
    g.beginPath();
    g.moveTo(left, at);
    g.lineTo(width, at);
    g.stroke();
    g.fillStyle = COLORS.text;
    g.textAlign = "right";
    g.fillText(labels[i]!, left - 6, at + 4);
  });
  canvas.dataset.yTicks = labels.join(" | ");
  return { g, width, height, left, axis, y };
}

/** Writes the x labels along the bottom, each centred on its position (clamped inside the canvas). */
function xLabels(f: Frame, canvas: HTMLCanvasElement, ticks: readonly { readonly x: number; readonly label: string }[]): void {
  const { g } = f;
  g.fillStyle = COLORS.text;
  for (const { x, label } of ticks) {
    const half = g.measureText(label).width / 2;
    g.textAlign = "left";
    g.fillText(label, Math.min(Math.max(x - half, 0), f.width - 2 * half), f.height - 4);
  }
  canvas.dataset.xTicks = ticks.map((t) => t.label).join(" | ");
}

/**
 * A per-second plot of `lines` over the `spanSeconds` up to `nowSecond`, its y axis `scale` of the
 * highest value (from 0 to a round number at or above it, labelled with the unit).
 */
export function drawSeries(canvas: HTMLCanvasElement, lines: readonly Line[], nowSecond: number, spanSeconds: number, scale: (max: number) => Scale): void {
  const start = nowSecond - spanSeconds;
  let max = 0;
  for (const line of lines) for (const [second, value] of line.bySecond) if (second > start) max = Math.max(max, value);
  const f = frame(canvas, scale(max));
  const x = (second: number): number => f.left + (f.width - f.left - 1) * ((second - start) / spanSeconds);
  xLabels(
    f,
    canvas,
    timeTicks(spanSeconds).map((t) => ({ x: x(nowSecond - t.secondsAgo), label: t.label })),
  );
  for (const line of lines) {
    f.g.strokeStyle = line.color;
    f.g.lineWidth = 1.6;
    f.g.beginPath();
    for (let s = start; s <= nowSecond; s++) {
      const px = x(s);
      const py = f.y(line.bySecond.get(s) ?? 0);
      if (s === start) f.g.moveTo(px, py);
      else f.g.lineTo(px, py);
    }
    f.g.stroke();
  }
  canvas.setAttribute("aria-label", `${lines.map((l) => l.label).join(" and ")}: y axis ${canvas.dataset.yTicks ?? ""}; x axis ${canvas.dataset.xTicks ?? ""}`);
}

/** A histogram of `counts` (one per bucket of histogram.ts), its y axis in whole counts. */
export function drawHistogram(canvas: HTMLCanvasElement, counts: readonly number[], color: string, what: string): void {
  const f = frame(canvas, countScale(Math.max(0, ...counts)));
  const slot = (f.width - f.left - 1) / counts.length;
  const x = (edge: number): number => f.left + slot * edge;
  f.g.fillStyle = color;
  counts.forEach((count, i) => {
    if (count === 0) return;
    const top = f.y(count);
    f.g.fillRect(x(i) + 1, top, Math.max(1, slot - 2), f.y(0) - top);
  });
  xLabels(
    f,
    canvas,
    edgeTicks().map((t) => ({ x: x(t.edge), label: t.label })),
  );
  const total = counts.reduce((a, b) => a + b, 0);
  const busiest = counts.indexOf(Math.max(...counts));
  canvas.dataset.total = String(total);
  canvas.setAttribute(
    "aria-label",
    `${what}: ${formatCount(total)} in the last 5 min${total > 0 ? `, most between ${bucketLabel(busiest)}` : ""}; y ` +
      `axis ${canvas.dataset.yTicks ?? ""}; x axis ${canvas.dataset.xTicks ?? ""}`,
  );
}
