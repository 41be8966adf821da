// An Extism plugin built with @extism/as-pdk that takes lockhost locks through the lock
// functions (extism:host/user, abi/extism.ts): each `call_<op>` export passes its input (the
// function's JSON arguments) to `lock_<op>` and outputs its JSON reply; `http` makes an HTTP
// request through the kernel (its input: the request JSON, a newline, the body) and outputs the
// status, a newline and the body. test/guest-extism-locks.test.ts drives it in both runtimes,
// and test/extism-entry.test.ts under @extism/extism with lockhost/extism's functions.
import { Config, Host, LogLevel, Memory } from "@extism/as-pdk";
import { http_request, length } from "@extism/as-pdk/lib/env";

function guestAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  unreachable();
}

/** The input to `fn` (a lock function) as its JSON arguments, its JSON reply as the output. */
function forward(fn: (offset: u64) => u64): i32 {
  const args = Memory.allocateBytes(Host.input());
  const reply = fn(args.offset);
  Host.outputMemory(new Memory(reply, length(reply)));
  return 0;
}

@external("extism:host/env", "http_status_code")
declare function http_status_code(): i32;

/** An HTTP request through the kernel: input "<request JSON>\n<body>", output "<status>\n<body>". */
export function http(): i32 {
  const input = Host.inputString();
  const nl = input.indexOf("\n");
  const req = Memory.allocateString(nl < 0 ? input : input.slice(0, nl));
  const body = Memory.allocateString(nl < 0 ? "" : input.slice(nl + 1));
  const res = http_request(req.offset, body.offset);
  const text = new Memory(res, length(res)).toString();
  Host.outputString(`${http_status_code()}\n${text}`);
  return 0;
}

/** A lock function's JSON reply to `args`, as text. */
function ask(fn: (offset: u64) => u64, args: string): string {
  const reply = fn(Memory.allocateString(args).offset);
  return new Memory(reply, length(reply)).toString();
}

/**
 * A scheduled job: its schedule's lock is handle 0 while it runs (for state and a fenced
 * request, as in the native ABI). It logs that lock's state and, when its config has
 * `ledger_url`, writes there under that lock's fence.
 */
export function tick(): i32 {
  Host.log(LogLevel.Info, `tick state ${ask((o: u64): u64 => lock_state(o), '{"handle":0}')}`);
  const url = Config.get("ledger_url");
  if (url !== null) {
    const req = Memory.allocateString(`{"method":"POST","url":"${url}","fence_handle":0}`);
    const res = http_request(req.offset, Memory.allocateString("tick").offset);
    Host.log(LogLevel.Info, `wrote ${http_status_code()} ${new Memory(res, length(res)).toString()}`);
  }
  return 0;
}

/** Takes a lock and spins until the host stops the call (a time limit), never returning. */
export function hold_and_spin(): i32 {
  forward((o: u64): u64 => lock_try(o));
  while (true) {}
  return 0;
}

@external("extism:host/user", "lock_try")
declare function lock_try(offset: u64): u64;
@external("extism:host/user", "lock_acquire")
declare function lock_acquire(offset: u64): u64;
@external("extism:host/user", "lock_renew")
declare function lock_renew(offset: u64): u64;
@external("extism:host/user", "lock_release")
declare function lock_release(offset: u64): u64;
@external("extism:host/user", "lock_fence")
declare function lock_fence(offset: u64): u64;
@external("extism:host/user", "lock_owner")
declare function lock_owner(offset: u64): u64;
@external("extism:host/user", "lock_status")
declare function lock_status(offset: u64): u64;
@external("extism:host/user", "lock_state")
declare function lock_state(offset: u64): u64;
@external("extism:host/user", "lock_restore")
declare function lock_restore(offset: u64): u64;
@external("extism:host/user", "lock_try_read")
declare function lock_try_read(offset: u64): u64;
@external("extism:host/user", "lock_try_write")
declare function lock_try_write(offset: u64): u64;
@external("extism:host/user", "lock_acquire_read")
declare function lock_acquire_read(offset: u64): u64;
@external("extism:host/user", "lock_acquire_write")
declare function lock_acquire_write(offset: u64): u64;
@external("extism:host/user", "lock_try_permit")
declare function lock_try_permit(offset: u64): u64;
@external("extism:host/user", "lock_acquire_permit")
declare function lock_acquire_permit(offset: u64): u64;
@external("extism:host/user", "lock_try_campaign")
declare function lock_try_campaign(offset: u64): u64;
@external("extism:host/user", "lock_campaign")
declare function lock_campaign(offset: u64): u64;
@external("extism:host/user", "lock_proclaim")
declare function lock_proclaim(offset: u64): u64;
@external("extism:host/user", "lock_resign")
declare function lock_resign(offset: u64): u64;
@external("extism:host/user", "lock_leader")
declare function lock_leader(offset: u64): u64;

export function call_try(): i32 {
  return forward((o: u64): u64 => lock_try(o));
}
export function call_acquire(): i32 {
  return forward((o: u64): u64 => lock_acquire(o));
}
export function call_renew(): i32 {
  return forward((o: u64): u64 => lock_renew(o));
}
export function call_release(): i32 {
  return forward((o: u64): u64 => lock_release(o));
}
export function call_fence(): i32 {
  return forward((o: u64): u64 => lock_fence(o));
}
export function call_owner(): i32 {
  return forward((o: u64): u64 => lock_owner(o));
}
export function call_status(): i32 {
  return forward((o: u64): u64 => lock_status(o));
}
export function call_state(): i32 {
  return forward((o: u64): u64 => lock_state(o));
}
export function call_restore(): i32 {
  return forward((o: u64): u64 => lock_restore(o));
}
export function call_try_read(): i32 {
  return forward((o: u64): u64 => lock_try_read(o));
}
export function call_try_write(): i32 {
  return forward((o: u64): u64 => lock_try_write(o));
}
export function call_acquire_read(): i32 {
  return forward((o: u64): u64 => lock_acquire_read(o));
}
export function call_acquire_write(): i32 {
  return forward((o: u64): u64 => lock_acquire_write(o));
}
export function call_try_permit(): i32 {
  return forward((o: u64): u64 => lock_try_permit(o));
}
export function call_acquire_permit(): i32 {
  return forward((o: u64): u64 => lock_acquire_permit(o));
}
export function call_try_campaign(): i32 {
  return forward((o: u64): u64 => lock_try_campaign(o));
}
export function call_campaign(): i32 {
  return forward((o: u64): u64 => lock_campaign(o));
}
export function call_proclaim(): i32 {
  return forward((o: u64): u64 => lock_proclaim(o));
}
export function call_resign(): i32 {
  return forward((o: u64): u64 => lock_resign(o));
}
export function call_leader(): i32 {
  return forward((o: u64): u64 => lock_leader(o));
}
