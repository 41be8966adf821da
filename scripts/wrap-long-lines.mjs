#!/usr/bin/env node
// Splits source lines over 160 characters that the formatter leaves alone: comments and string
// literals. Not run by CI (scripts/line-length.mjs only reports); a tool to run by hand, then
// review the diff. Best after the formatter, then the formatter again:
//   npm run format && node scripts/wrap-long-lines.mjs && npm run format && npm run lint
//
// - A `//` comment paragraph (consecutive `// text` lines at one indent) with a long line is
//   reflowed at word boundaries from that line on; the lines before it stay as they are.
// - A `/** … */` or `/* … */` block: its ` * text` paragraphs likewise; a one-line block becomes
//   a multi-line one.
// - A string literal ("…", '…') or template literal (`…${x}…`) on a long line is cut at spaces
//   into `"…" +` pieces, one a line: the same value (a template's pieces are templates, each a
//   string). Only where `+` cannot change the meaning: a call argument, an initializer, a property
//   value, an array element, a return, an operand of a lower-precedence operator. Never in a
//   type, an import path, a tagged template or a property name.
// TypeScript's parser finds the comments and literals, so text in other places is never touched.
// What it cannot split (code, trailing comments after code, words longer than a line) is listed
// for a hand fix.
//
// Usage: node scripts/wrap-long-lines.mjs [--check] [--max N] [file ...]
//   (default: every tracked .ts/.mjs/.js file; --check writes nothing and lists what it would change)
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { longLines, MAX_LINE, trackedSources } from "./line-length.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Pieces of a split string aim this far under the limit, so that the formatter can indent them a little more. */
const STRING_SLACK = 8;
/** A reflowed comment paragraph is at least this wide (the house wraps comments at about 100). */
const COMMENT_WIDTH = 100;

/**
 * Rewrites `text` (the source of `file`) so that fewer lines are over `max`; returns the new text
 * (the same string when nothing changed).
 */
export function wrapLongLines(text, file, max = MAX_LINE) {
  let out = joinPieces(text, file);
  // Each pass splits one literal a line (the longest), then the text is parsed again: a split
  // moves what follows, and a line with two long literals needs two passes.
  if (longLines(out, max).length === 0) return out;
  for (let pass = 0; pass < 8; pass++) {
    const next = wrapPass(out, file, max);
    if (next === out) break;
    out = next;
  }
  return out;
}

function wrapPass(text, file, max) {
  const long = longLines(text, max);
  if (long.length === 0) return text;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  const lineStarts = source.getLineStarts();
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line;
  const longSet = new Set(long.map((l) => l.line - 1));
  const edits = [];

  // Comments first: whole-line `//` runs and block comments.
  const comments = commentRanges(source, text);
  edits.push(...commentEdits(text, comments, lineStarts, lineOf, longSet, max));
  const commentLines = new Set(edits.flatMap((e) => rangeLines(lineOf, e.start, e.end)));

  // Then literals: on each long line not already rewritten, the longest splittable one.
  const byLine = new Map();
  const visit = (node) => {
    if (isSplittableLiteral(node)) {
      const start = node.getStart(source);
      const line = lineOf(start);
      if (line === lineOf(node.end) && longSet.has(line) && !commentLines.has(line) && safeContext(node)) {
        const best = byLine.get(line);
        if (!best || node.end - start > best.end - best.getStart(source)) byLine.set(line, node);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const [line, node] of byLine) {
    const edit = splitLiteral(text, source, node, lineStarts[line], max);
    if (edit) edits.push(edit);
  }
  return applyEdits(text, edits);
}

/**
 * Joins `"a " + "b"` back into `"a b"` where both pieces stand on one line: the formatter puts
 * pieces of an earlier split side by side when they fit after all. Only literals of one quote
 * kind (templates with templates), so the value and the escapes stay as they are.
 */
export function joinPieces(text, file) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  const lineOf = (pos) => source.getLineAndCharacterOfPosition(pos).line;
  const edits = [];
  const visit = (node) => {
    if (
      ts.isBinaryExpression(node) &&
      node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
      isSplittableLiteral(node.right) &&
      isSplittableLiteral(rightmost(node.left)) &&
      lineOf(rightmost(node.left).getStart(source)) === lineOf(node.right.end)
    ) {
      const left = rightmost(node.left);
      const a = text.slice(left.getStart(source), left.end);
      const b = text.slice(node.right.getStart(source), node.right.end);
      const between = text.slice(left.end, node.right.getStart(source));
      if (a[0] === b[0] && /^\s*\+\s*$/.test(between) && !hasComment(between))
        edits.push({ start: left.end - 1, end: node.right.getStart(source) + 1, text: "" });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return applyEdits(text, edits);
}

/** The last operand of a chain `a + b + c` (c), where a join may happen. */
function rightmost(node) {
  return ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken ? node.right : node;
}

function hasComment(between) {
  return between.includes("/");
}

function scriptKind(file) {
  return /\.(mjs|cjs|js)$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
}

function rangeLines(lineOf, start, end) {
  const lines = [];
  for (let l = lineOf(start); l <= lineOf(Math.max(start, end - 1)); l++) lines.push(l);
  return lines;
}

/** Every comment in the file, as TypeScript's scanner sees them: { pos, end, kind }, sorted, without duplicates. */
function commentRanges(source, text) {
  const seen = new Map();
  const add = (ranges) => {
    for (const r of ranges ?? []) seen.set(r.pos, r);
  };
  const at = (pos) => {
    add(ts.getLeadingCommentRanges(text, pos));
    add(ts.getTrailingCommentRanges(text, pos));
  };
  const visit = (node) => {
    at(node.pos);
    at(node.end);
    ts.forEachChild(node, visit);
  };
  at(0);
  visit(source);
  at(source.endOfFileToken.pos);
  return [...seen.values()].sort((a, b) => a.pos - b.pos);
}

const LIST_ITEM = /^([-*+] |\d+[.)] |\| |@|```)/;

/** Edits that reflow the comment paragraphs holding a long line. */
function commentEdits(text, comments, lineStarts, lineOf, longSet, max) {
  const edits = [];
  const lineText = (l) => text.slice(lineStarts[l], (lineStarts[l + 1] ?? text.length + 1) - 1).replace(/\r$/, "");
  const lineEnd = (l) => lineStarts[l] + lineText(l).length;

  // `//` comments that are a whole line each.
  const whole = new Map(); // line -> { indent, body }
  for (const c of comments) {
    if (c.kind !== ts.SyntaxKind.SingleLineCommentTrivia) continue;
    const l = lineOf(c.pos);
    const t = lineText(l);
    const m = /^(\s*)\/\/(.*)$/.exec(t);
    if (m && lineStarts[l] + m[1].length === c.pos && c.end === lineEnd(l)) whole.set(l, { indent: m[1], body: m[2] });
  }
  const done = new Set();
  for (const l of [...longSet].sort((a, b) => a - b)) {
    const c = whole.get(l);
    if (!c || done.has(l) || !c.body.startsWith(" ") || c.body.startsWith("  ")) continue;
    // The paragraph: from this line down while lines continue it (same indent, `// text`, not a list item).
    let last = l;
    while (true) {
      const n = whole.get(last + 1);
      if (!n || n.indent !== c.indent || !/^ \S/.test(n.body) || LIST_ITEM.test(n.body.slice(1))) break;
      last++;
    }
    let first = l;
    while (true) {
      const p = whole.get(first - 1);
      if (!p || p.indent !== c.indent || !/^ \S/.test(p.body) || LIST_ITEM.test(whole.get(first).body.slice(1))) break;
      first--;
    }
    for (let k = first; k <= last; k++) done.add(k);
    const prefix = `${c.indent}// `;
    const width = paragraphWidth(first, last, lineText, max);
    const words = [];
    for (let k = l; k <= last; k++) words.push(...whole.get(k).body.trim().split(/\s+/));
    // A list item keeps its continuation lines under its text.
    const marker = l === first ? /^([-*+] |\d+[.)] )/.exec(c.body.slice(1))?.[1] : undefined;
    const lines = fill(words, prefix, marker ? prefix + " ".repeat(marker.length) : prefix, width);
    edits.push({ start: lineStarts[l], end: lineEnd(last), text: lines.join("\n") });
  }

  // Block comments: `/** … */` and `/* … */`.
  for (const c of comments) {
    if (c.kind !== ts.SyntaxKind.MultiLineCommentTrivia) continue;
    const firstLine = lineOf(c.pos);
    const lastLine = lineOf(c.end - 1);
    let hit = false;
    for (let k = firstLine; k <= lastLine; k++) hit ||= longSet.has(k);
    if (!hit) continue;
    const open = text.startsWith("/**", c.pos) ? "/**" : "/*";
    const startIndent = /^(\s*)/.exec(lineText(firstLine))[1];
    const alone = lineStarts[firstLine] + startIndent.length === c.pos && c.end === lineEnd(lastLine);
    if (firstLine === lastLine) {
      // A one-line block that is the whole line: written out as a multi-line block.
      if (!alone) continue;
      const body = text.slice(c.pos + open.length, c.end - 2).trim();
      if (body.includes("\n") || body.length === 0) continue;
      const lines = fill(body.split(/\s+/), `${startIndent} * `, `${startIndent} * `, Math.max(COMMENT_WIDTH, Math.min(max, startIndent.length + 3 + 90)));
      edits.push({ start: c.pos, end: c.end, text: `${open}\n${lines.join("\n")}\n${startIndent} */` });
      continue;
    }
    // A multi-line block: reflow its ` * text` paragraphs that hold a long line (never inside ``` fences).
    const star = new Map(); // line -> { lead, body } for lines ` * text`
    let fenced = false;
    for (let k = firstLine + 1; k < lastLine; k++) {
      const m = /^(\s*\* ?)(.*)$/.exec(lineText(k));
      if (!m) continue;
      if (m[2].trimStart().startsWith("```")) {
        fenced = !fenced;
        continue;
      }
      if (!fenced) star.set(k, { lead: m[1], body: m[2] });
    }
    const seenHere = new Set();
    for (let l = firstLine + 1; l < lastLine; l++) {
      const s = star.get(l);
      if (!longSet.has(l) || !s || seenHere.has(l) || !/^\S/.test(s.body)) continue;
      // A line continues the paragraph when it has the same lead and text that is not a list item or a tag.
      const continues = (k) => {
        const n = star.get(k);
        return n !== undefined && n.lead === s.lead && /^\S/.test(n.body) && !LIST_ITEM.test(n.body);
      };
      let last = l;
      while (continues(last + 1)) last++;
      let first = l;
      while (star.has(first - 1) && star.get(first - 1).lead === s.lead && /^\S/.test(star.get(first - 1).body) && !LIST_ITEM.test(star.get(first).body))
        first--;
      for (let k = first; k <= last; k++) seenHere.add(k);
      const width = paragraphWidth(first, last, lineText, max);
      const words = [];
      for (let k = l; k <= last; k++) words.push(...star.get(k).body.trim().split(/\s+/));
      // A list item or tag line keeps its marker; its continuation lines are indented under its text.
      const marker = /^([-*+] |\d+[.)] )/.exec(s.body)?.[1];
      const rest = marker && l === first ? s.lead + " ".repeat(marker.length) : s.lead;
      edits.push({ start: lineStarts[l], end: lineEnd(last), text: fill(words, s.lead, rest, width).join("\n") });
    }
  }
  return edits;
}

/** The width a paragraph is reflowed to: the widest of its lines that fit, at least COMMENT_WIDTH, at most `max`. */
function paragraphWidth(first, last, lineText, max) {
  let width = COMMENT_WIDTH;
  for (let k = first; k <= last; k++) {
    const n = [...lineText(k)].length;
    if (n <= max) width = Math.max(width, n);
  }
  return Math.min(width, max);
}

/** Words filled into lines of at most `width` characters: the first line starts with `firstPrefix`, the others with `prefix`. */
function fill(words, firstPrefix, prefix, width) {
  const lines = [];
  let line = firstPrefix;
  let empty = true;
  for (const w of words) {
    if (w === "") continue;
    if (!empty && [...line].length + 1 + [...w].length > width) {
      lines.push(line);
      line = prefix + w;
    } else {
      line += (empty ? "" : " ") + w;
    }
    empty = false;
  }
  lines.push(line);
  return lines;
}

function isSplittableLiteral(node) {
  return ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node);
}

const LOWER_THAN_PLUS = new Set([
  ts.SyntaxKind.EqualsToken,
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.LessThanToken,
  ts.SyntaxKind.GreaterThanToken,
  ts.SyntaxKind.LessThanEqualsToken,
  ts.SyntaxKind.GreaterThanEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandToken,
  ts.SyntaxKind.BarBarToken,
  ts.SyntaxKind.QuestionQuestionToken,
  ts.SyntaxKind.CommaToken,
  ts.SyntaxKind.InKeyword,
]);

/** Whether `a + b` can stand where `node` stands without a change of meaning (or of a type the code relies on). */
function safeContext(node) {
  const p = node.parent;
  if (!p) return false;
  if (ts.isCallExpression(p) || ts.isNewExpression(p)) {
    return p.expression !== node && (p.arguments ?? []).includes(node) && !isRequireOrImport(p) && !isTestName(p, node);
  }
  if (ts.isPropertyAssignment(p)) return p.initializer === node;
  if (ts.isVariableDeclaration(p)) return p.initializer === node && !isConstLiteralType(p);
  if (ts.isArrayLiteralExpression(p) || ts.isReturnStatement(p) || ts.isThrowStatement(p) || ts.isParenthesizedExpression(p)) return true;
  if (ts.isArrowFunction(p)) return p.body === node;
  if (ts.isConditionalExpression(p)) return p.whenTrue === node || p.whenFalse === node;
  if (ts.isBinaryExpression(p)) {
    const op = p.operatorToken.kind;
    if (op === ts.SyntaxKind.PlusToken) return true; // string + string: associative
    return LOWER_THAN_PLUS.has(op) && (op !== ts.SyntaxKind.EqualsToken || p.right === node);
  }
  if (ts.isPropertyDeclaration(p) || ts.isParameter(p)) return p.initializer === node && p.type !== undefined;
  if (ts.isSpreadElement(p) || ts.isTemplateSpan(p)) return false;
  return false;
}

/**
 * A test's name (`it("…", async () => {`): the formatter keeps such a call on one line whatever its
 * length, and would lay out a split name as a call over many lines, the whole test indented anew.
 * A long name is shortened by hand.
 */
function isTestName(call, node) {
  if (call.arguments[0] !== node) return false;
  let callee = call.expression;
  while (ts.isCallExpression(callee) || ts.isPropertyAccessExpression(callee)) callee = callee.expression;
  return ts.isIdentifier(callee) && /^(it|test|describe|bench|suite)$/.test(callee.text);
}

function isRequireOrImport(call) {
  return call.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(call.expression) && call.expression.text === "require");
}

/** `const X = "…"` without a type: its type is the literal, which a concatenation would widen to string. */
function isConstLiteralType(decl) {
  const list = decl.parent;
  return decl.type === undefined && ts.isVariableDeclarationList(list) && (list.flags & ts.NodeFlags.Const) !== 0 && !ts.isTemplateExpression(decl.initializer);
}

/** The places a literal may be cut: offsets (from the literal's start) just after a space of its text, never inside `${…}` or after a backslash. */
function cutPoints(text, source, node) {
  const start = node.getStart(source);
  const parts = []; // [from, to) offsets of literal text
  if (ts.isTemplateExpression(node)) {
    const part = (n, openLen, closeLen) => {
      const s = n.getStart(source) - start;
      parts.push([s + openLen, n.end - start - closeLen]);
    };
    part(node.head, 1, 2);
    for (const span of node.templateSpans) part(span.literal, 1, ts.isTemplateTail(span.literal) ? 1 : 2);
  } else {
    parts.push([1, node.end - start - 1]);
  }
  const raw = text.slice(start, node.end);
  const cuts = [];
  for (const [from, to] of parts) {
    for (let i = from; i < to - 1; i++) {
      if (raw[i] !== " " || raw[i + 1] === " ") continue;
      let slashes = 0;
      for (let j = i - 1; j >= from && raw[j] === "\\"; j--) slashes++;
      if (slashes % 2 === 1) continue;
      cuts.push(i + 1);
    }
  }
  return cuts.filter((c) => c > 1 && c < raw.length - 1);
}

/** The edit that cuts the literal `node` into pieces joined by `+`, one a line, or undefined when no cut helps. */
function splitLiteral(text, source, node, lineStart, max) {
  const start = node.getStart(source);
  const raw = text.slice(start, node.end);
  const quote = ts.isStringLiteral(node) ? raw[0] : "`";
  const cuts = cutPoints(text, source, node);
  if (cuts.length === 0) return undefined;
  const lineIndent = /^\s*/.exec(text.slice(lineStart, start))[0];
  const indent = `${lineIndent}  `;
  const target = max - STRING_SLACK;
  const column = [...text.slice(lineStart, start)].length;
  const width = (from, to) => [...raw.slice(from, to)].length;
  const pieces = [];
  let from = 0;
  let col = column; // where the current piece starts
  while (true) {
    // The rest fits (with what follows the literal on its line, the formatter's business): done.
    const restWidth = width(from, raw.length) + (from > 0 ? 1 : 0);
    if (col + restWidth <= target) break;
    // The last cut after `from` that keeps this piece (plus its closing quote and " +") within the target.
    let best;
    for (const c of cuts) {
      if (c <= from + 1) continue;
      if (col + (from > 0 ? 1 : 0) + width(from, c) + 1 + 2 <= target) best = c;
      else break;
    }
    if (best === undefined) {
      // No cut fits: take the first one after `from` (a piece over the target beats none), unless none is left.
      best = cuts.find((c) => c > from + 1);
      if (best === undefined) break;
    }
    pieces.push([from, best]);
    from = best;
    col = [...indent].length;
  }
  if (pieces.length === 0) return undefined;
  pieces.push([from, raw.length]);
  const piece = ([a, b]) => (a === 0 ? "" : quote) + raw.slice(a, b) + (b === raw.length ? "" : quote);
  const out = pieces.map(piece).join(` +\n${indent}`);
  return { start, end: node.end, text: out };
}

function applyEdits(text, edits) {
  edits.sort((a, b) => b.start - a.start);
  let out = text;
  let floor = Infinity;
  for (const e of edits) {
    if (e.end > floor) continue; // overlaps an edit already made: the next pass sees it again
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
    floor = e.start;
  }
  return out;
}

function main(argv) {
  let max = MAX_LINE;
  let check = false;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--max") max = Number(argv[++i]);
    else if (argv[i] === "--check") check = true;
    else files.push(argv[i]);
  }
  let before = 0;
  let after = 0;
  let changed = 0;
  const left = [];
  // Named files are relative to the working directory; the tracked ones to the repository.
  const named = files.map((f) => path.resolve(f));
  for (const file of named.length > 0 ? named.map((f) => path.relative(ROOT, f)) : trackedSources()) {
    let text;
    try {
      text = readFileSync(path.resolve(ROOT, file), "utf8");
    } catch {
      continue;
    }
    before += longLines(text, max).length;
    const next = wrapLongLines(text, file, max);
    const still = longLines(next, max);
    after += still.length;
    for (const l of still) left.push(`${file}:${l.line}: ${l.length} characters`);
    if (next !== text) {
      changed++;
      if (!check) writeFileSync(path.resolve(ROOT, file), next);
    }
  }
  for (const l of left) console.log(l);
  console.log(
    `wrap-long-lines: ${before} line(s) over ${max} before, ${after} after, in ${changed} file(s) ${check ? "that would change" : "changed"}; ` +
      `${left.length} to fix by hand (listed above)`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
