// The README's config reference is written from the config declarations (npm run docs:config):
// this fails when the two disagree, showing what the README should hold.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configReference, withReference } from "../host/config/reference.js";

describe("README config reference", () => {
  it("is what the declarations say (run npm run docs:config after changing a field)", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "README.md"), "utf8");
    expect(readme).toBe(withReference(readme, configReference()));
  });

  it("names every key of every table the reader accepts", () => {
    const reference = configReference();
    for (const key of ["[locking.redis]", "key_prefix =", "[locking.pg]", "sessions =", "renew_at_ratio =", "poll_interval_ms =", "token =", "global_keys =", "ttl_ms =", "packages ="]) {
      expect(reference).toContain(key);
    }
  });
});
