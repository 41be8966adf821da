#!/usr/bin/env node
// Copies the dashboard's static files (its page, stylesheet and icon) next to its compiled
// modules in dist, after `tsc -p tsconfig.client.json` (tsc copies nothing but TypeScript's output).
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const from = path.join(ROOT, "host/admin/dashboard/client");
const to = path.join(ROOT, "dist/host/admin/dashboard/client");
mkdirSync(to, { recursive: true });
for (const file of readdirSync(from)) {
  if (!file.endsWith(".ts")) copyFileSync(path.join(from, file), path.join(to, file));
}
