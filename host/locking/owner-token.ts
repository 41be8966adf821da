// Owner tokens: a fresh random UUID (version 4, as crypto.randomUUID makes) per acquisition.
// Written here rather than taken from crypto.randomUUID, which builds its string from 20
// concatenations: ~600 bytes of garbage per token, and a tree of 20 strings that every token
// kept alive (a held lease's, or a released one's in ReleasedOwners) dragged through each GC.
// The same entropy (the CSPRNG, drawn in batches as randomUUID does), written as ASCII into one
// reused buffer and read out as one flat string.
import { randomFillSync } from "node:crypto";

/** Tokens drawn from one fill of the entropy pool. */
const BATCH = 256;
const pool = new Uint8Array(16 * BATCH);
let used = BATCH;

/** The token being written: "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" as ASCII. */
const text = Buffer.from("00000000-0000-4000-8000-000000000000", "latin1");
/** Where each of the 16 bytes' two hex digits go in `text` (the dashes skipped). */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
/** Each byte's two hex digits, as ASCII codes. */
const HIGH = new Uint8Array(256);
const LOW = new Uint8Array(256);
for (let b = 0; b < 256; b++) {
  const hex = b.toString(16).padStart(2, "0");
  HIGH[b] = hex.charCodeAt(0);
  LOW[b] = hex.charCodeAt(1);
}

/** A fresh random version-4 UUID, lowercase, as crypto.randomUUID returns. */
export function mintOwner(): string {
  if (used === BATCH) {
    randomFillSync(pool);
    used = 0;
  }
  const at = 16 * used++;
  // RFC 9562: version 4 in the high nibble of byte 6, variant 10 in the top bits of byte 8.
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x40;
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80;
  for (let i = 0; i < 16; i++) {
    const b = pool[at + i]!;
    text[AT[i]!] = HIGH[b]!;
    text[AT[i]! + 1] = LOW[b]!;
  }
  return text.toString("latin1");
}
