#!/usr/bin/env node
// Writes the README's config reference from the config declarations (run after a build):
//   npm run docs:config            rewrite README.md between the config-reference markers
// test/config-reference.test.ts fails when README.md and the declarations disagree.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
await import(path.join(ROOT, "dist/host/index.js")); // registers the built-in backends
const { configReference, withReference } = await import(path.join(ROOT, "dist/host/config/reference.js"));
const readme = path.join(ROOT, "README.md");
writeFileSync(readme, withReference(readFileSync(readme, "utf8"), configReference()));
console.log("README.md: config reference written");
