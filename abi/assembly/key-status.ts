// keyStatusOf: the status of a key as a typed value. The host's lock.status answers with the
// documented JSON (abi/ABI.md); this file reads it with a small parser of its own, so a guest
// needs no JSON library and the ABI needs no second status operation (an older host answers
// the same JSON, and the other ABI rows stay as they are).
import { INTERNAL } from "../status";
import { keyStatus, LockError } from "./lock";

/** Where a key stands, as `lock.status` reports it (the owner token is never shown to guests). */
export class KeyStatus {
  /** The key as the host names it (the full lock name, e.g. `"report:nightly"` or `"global:ledger"`). */
  key: string = "";
  /** Whether someone holds the key now; every other field is 0 or `""` when not. */
  held: bool = false;
  /** The holder's plugin (`"host"` for host-side callers). */
  plugin: string = "";
  /** The holder's node (its `[host] node`). */
  node: string = "";
  /** The fence of the holder's acquisition. */
  fence: i64 = 0;
  /** When the lease was taken and when it ends, ms since the epoch (the server's clock). */
  acquiredAtMs: i64 = 0;
  expiresAtMs: i64 = 0;
  /** What is left of the lease, ms. */
  ttlRemainingMs: i64 = 0;
  /** The TTL the lease was set with, ms. */
  ttlMs: i64 = 0;
}

/** A key's status, or the error (`error` non-null, `status` null). */
export class KeyStatusResult {
  constructor(
    readonly status: KeyStatus | null,
    readonly error: LockError | null,
  ) {}

  /** True when there is no error. */
  get ok(): bool {
    return this.error == null;
  }
}

/**
 * The status of `key` (`flags`: 0 or `GLOBAL`) as a `KeyStatus`, or the error. Never aborts:
 * an answer this SDK cannot read is an `INTERNAL` error carrying the text.
 */
export function keyStatusOf(key: string, flags: i32 = 0): KeyStatusResult {
  const text = keyStatus(key, flags);
  const error = text.error;
  if (error) return new KeyStatusResult(null, error);
  const status = parseKeyStatus(text.value);
  if (!status) return new KeyStatusResult(null, new LockError(INTERNAL, "lockhost SDK: cannot read the host's status answer: " + text.value));
  return new KeyStatusResult(status, null);
}

/** Reads the host's status JSON; null when it is not the documented shape. Exported for tests. */
export function parseKeyStatus(json: string): KeyStatus | null {
  const p = new JsonReader(json);
  const s = new KeyStatus();
  if (!p.object(s, false) || !p.end()) return null;
  return s;
}

/** Just enough JSON for the status object: objects, arrays, strings, integers, booleans and null. */
class JsonReader {
  private at: i32 = 0;
  constructor(private readonly text: string) {}

  end(): bool {
    this.space();
    return this.at == this.text.length;
  }

  /** An object; its fields land in `s` (the top level's, or `holder`'s when `inHolder`). */
  object(s: KeyStatus, inHolder: bool): bool {
    if (!this.char(0x7b)) return false; // {
    if (this.char(0x7d)) return true; // }
    do {
      const name = this.string();
      if (name == null || !this.char(0x3a)) return false; // :
      if (!this.field(s, name, inHolder)) return false;
    } while (this.char(0x2c)); // ,
    return this.char(0x7d);
  }

  private field(s: KeyStatus, name: string, inHolder: bool): bool {
    this.space();
    const c = this.at < this.text.length ? this.text.charCodeAt(this.at) : -1;
    if (c == 0x7b) return name == "holder" && !inHolder ? this.object(s, true) : this.object(new KeyStatus(), true);
    if (c == 0x5b) {
      // An array: no status field is one; its elements are read and dropped.
      this.at++;
      if (this.char(0x5d)) return true; // ]
      const skipped = new KeyStatus();
      do {
        if (!this.field(skipped, "", true)) return false;
      } while (this.char(0x2c));
      return this.char(0x5d);
    }
    if (c == 0x22) {
      const v = this.string();
      if (v == null) return false;
      if (inHolder && name == "plugin") s.plugin = v;
      else if (inHolder && name == "node") s.node = v;
      else if (!inHolder && name == "key") s.key = v;
      return true;
    }
    if (c == 0x74 || c == 0x66 || c == 0x6e) {
      // true / false / null
      const word = c == 0x74 ? "true" : c == 0x66 ? "false" : "null";
      if (this.text.substr(this.at, word.length) != word) return false;
      this.at += word.length;
      if (!inHolder && name == "held") s.held = c == 0x74;
      return true;
    }
    const start = this.at;
    if (c == 0x2d) this.at++;
    let n: i64 = 0;
    while (this.at < this.text.length) {
      const d = this.text.charCodeAt(this.at);
      if (d < 0x30 || d > 0x39) break;
      n = n * 10 + (d - 0x30);
      this.at++;
    }
    if (this.at == start || (c == 0x2d && this.at == start + 1)) return false;
    // Fractions and exponents do not occur in the status; skip them if a host ever sends them.
    while (this.at < this.text.length && "0123456789.eE+-".includes(this.text.charAt(this.at))) this.at++;
    if (c == 0x2d) n = -n;
    if (inHolder) return true;
    if (name == "fence") s.fence = n;
    else if (name == "acquired_at_ms") s.acquiredAtMs = n;
    else if (name == "expires_at_ms") s.expiresAtMs = n;
    else if (name == "ttl_remaining_ms") s.ttlRemainingMs = n;
    else if (name == "ttl_ms") s.ttlMs = n;
    return true;
  }

  /** A JSON string with its escapes, or null. */
  string(): string | null {
    if (!this.char(0x22)) return null;
    let out = "";
    let from = this.at;
    while (this.at < this.text.length) {
      const c = this.text.charCodeAt(this.at);
      if (c == 0x22) {
        out += this.text.substring(from, this.at);
        this.at++;
        return out;
      }
      if (c != 0x5c) {
        this.at++;
        continue;
      }
      out += this.text.substring(from, this.at);
      if (this.at + 1 >= this.text.length) return null;
      const e = this.text.charCodeAt(this.at + 1);
      this.at += 2;
      if (e == 0x75) {
        // \uXXXX: one UTF-16 unit (a surrogate pair comes as two, as AssemblyScript strings hold them)
        if (this.at + 4 > this.text.length) return null;
        const hex = parseInt(this.text.substr(this.at, 4), 16);
        if (isNaN(hex)) return null;
        out += String.fromCharCode(<i32>hex);
        this.at += 4;
      } else if (e == 0x6e) out += "\n";
      else if (e == 0x74) out += "\t";
      else if (e == 0x72) out += "\r";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else out += String.fromCharCode(e); // \" \\ \/
      from = this.at;
    }
    return null;
  }

  private char(c: i32): bool {
    this.space();
    if (this.at < this.text.length && this.text.charCodeAt(this.at) == c) {
      this.at++;
      return true;
    }
    return false;
  }

  private space(): void {
    while (this.at < this.text.length) {
      const c = this.text.charCodeAt(this.at);
      if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) break;
      this.at++;
    }
  }
}
