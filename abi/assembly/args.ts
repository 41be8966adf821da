// How the host hands a string to a guest export (`guest.call("run", ["some text"])`): it asks
// the guest for an AssemblyScript string object of the right size (lockhost_alloc), writes the
// UTF-16 code units into it, passes its pointer as the i32 argument (the export declares a
// `string` parameter), and lets go of it after the call (lockhost_free). A guest that takes
// strings re-exports both from its entry file:
//
//     export { lockhost_abi_version, lockhost_alloc, lockhost_free } from "lockhost";
//
//     export function greet(name: string): void { trace("hello " + name); }

/**
 * Allocates a string object of `byteLength` bytes (UTF-16, so even) for the host to fill, and
 * pins it so the collector keeps it until `lockhost_free`. Returns its pointer, or 0 for an
 * odd or negative length. Called by the host only.
 */
export function lockhost_alloc(byteLength: i32): usize {
  if (byteLength < 0 || (byteLength & 1) != 0) return 0;
  return __pin(__new(<usize>byteLength, idof<string>()));
}

/** Unpins a string from `lockhost_alloc` once the call that took it returned. Called by the host only. */
export function lockhost_free(ptr: usize): void {
  if (ptr != 0) __unpin(ptr);
}
