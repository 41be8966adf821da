// The operations a guest's runtime serves on its own thread (OpSpec.local), with no trip to the
// host: the last call's error and reply, what the plugin was granted, its config values and its
// log lines. What they read is plain data handed over when the guest starts (the worker gets a
// copy), so they cost a function call, not a round trip.
import { INVALID_ARGUMENT, LOG_DEBUG, LOG_ERROR, MAX_KEY_BYTES, MAX_LOG_BYTES, NOT_FOUND } from "../../abi/status.js";
import type { GuestMemory, TraceBudget } from "./guest-env.js";

/** What a plugin was granted, as its guest's runtime sees it: plain data (it crosses to the worker). */
export interface GuestGrants {
  /** Capability names `lockhost.capability` answers 1 for: "config", "log", "http" when granted, each granted function namespace. */
  readonly capabilities: readonly string[];
  /** The plugin's `[plugins.config]` values, `${ENV}` already substituted. */
  readonly config: Readonly<Record<string, string>>;
  /** The least severe LOG_* level logged; a line below it costs nothing (LOG_ERROR + 1: none). */
  readonly logLevel: number;
}

/** What the local operations read and write besides guest memory. */
export interface LocalServices {
  readonly grants: GuestGrants;
  /** The call's line budget, shared with `trace`. */
  readonly lines: TraceBudget;
}

const utf8 = new TextEncoder();
const strict = new TextDecoder("utf-8", { fatal: true });
const lenient = new TextDecoder("utf-8");

/**
 * The local operations, by `module.name`. One that succeeds leaves last_error alone: a guest
 * that logs between a failed call and reading its error must still find that error.
 */
export function localImports(mem: GuestMemory, services: LocalServices): Readonly<Record<string, (...params: number[]) => number>> {
  const { grants, lines } = services;
  const capabilities = new Set(grants.capabilities);
  const config = new Map(Object.entries(grants.config).map(([k, v]) => [k, utf8.encode(v)]));
  /** Copies `bytes` into the guest's buffer when they fit; returns their length (ABI: nothing written otherwise). */
  const deliver = (buf: number, cap: number, bytes: Uint8Array): number => {
    if (bytes.byteLength <= cap >>> 0) mem.write(buf, bytes);
    return bytes.byteLength;
  };
  /** A name argument (capability, config key) decoded, or -code with last_error set. */
  const name = (ptr: number, len: number): string | number => {
    const bad = mem.checkBytes("name", ptr, len, MAX_KEY_BYTES, true);
    if (bad < 0) return bad;
    if (len === 0) return mem.fail(INVALID_ARGUMENT, "name must not be empty");
    try {
      return strict.decode(new Uint8Array(mem.memory.buffer, ptr >>> 0, len >>> 0));
    } catch {
      return mem.fail(INVALID_ARGUMENT, "name is not valid UTF-8");
    }
  };
  return {
    "lock.last_error": (buf: number, cap: number) => {
      if (!mem.inBounds(buf, cap)) return mem.outOfBounds("buffer", buf, cap);
      return deliver(buf, cap, mem.lastError);
    },
    "lockhost.last_reply": (buf: number, cap: number) => {
      if (!mem.inBounds(buf, cap)) return mem.outOfBounds("buffer", buf, cap);
      return deliver(buf, cap, mem.lastReply);
    },
    "lockhost.capability": (ptr: number, len: number) => {
      const n = name(ptr, len);
      return typeof n === "number" ? n : capabilities.has(n) ? 1 : 0;
    },
    "config.get": (ptr: number, len: number, buf: number, cap: number) => {
      if (!mem.inBounds(buf, cap)) return mem.outOfBounds("buffer", buf, cap);
      const key = name(ptr, len);
      if (typeof key === "number") return key;
      const value = config.get(key);
      if (!value)
        return mem.fail(
          NOT_FOUND,
          `config has no key ${JSON.stringify(key)} (keys: ${[...config.keys()].join(", ") || "none"}); set it in the plugin's [plugins.config] table`,
        );
      return deliver(buf, cap, value);
    },
    "log.write": (level: number, ptr: number, len: number) => {
      if (level < LOG_DEBUG || level > LOG_ERROR || !Number.isInteger(level)) {
        return mem.fail(INVALID_ARGUMENT, `level ${level} is not a log level (LOG_DEBUG 0, LOG_INFO 1, LOG_WARN 2, LOG_ERROR 3)`);
      }
      if (!mem.inBounds(ptr, len)) return mem.outOfBounds("message", ptr, len);
      // Below the plugin's level a line costs a comparison: no decoding, no budget.
      if (level < grants.logLevel) return 0;
      const cut = Math.min(len >>> 0, MAX_LOG_BYTES);
      // A log line is a diagnostic: bad UTF-8 shows as U+FFFD rather than losing the line.
      lines.line(() => lenient.decode(new Uint8Array(mem.memory.buffer, ptr >>> 0, cut)) + (cut < len >>> 0 ? "…" : ""), level);
      return 0;
    },
  };
}
