;; A guest written by hand against ABI v1: proves the ABI needs no SDK and no
;; particular language. Exports take and return plain integers.
(module
  (import "env" "memory" (memory 1))
  (import "lock" "try" (func $try (param i32 i32 i32 i32) (result i32)))
  (import "lock" "renew" (func $renew (param i32 i32) (result i32)))
  (import "lock" "release" (func $release (param i32) (result i32)))
  (import "lock" "fence" (func $fence (param i32) (result i64)))
  (import "lock" "owner" (func $owner (param i32 i32 i32) (result i32)))
  (import "lock" "status" (func $status (param i32 i32 i32 i32 i32) (result i32)))
  (import "lock" "last_error" (func $last_error (param i32 i32) (result i32)))

  ;; Memory layout: the key "raw" at 16, a 64-byte owner buffer at 64,
  ;; a 256-byte last_error buffer at 256.
  (data (i32.const 16) "raw")
  (global $KEY i32 (i32.const 16))
  (global $KEY_LEN i32 (i32.const 3))
  (global $OWNER_BUF i32 (i32.const 64))
  (global $ERR_BUF i32 (i32.const 256))
  (global $FLAG_KEEP i32 (i32.const 2))

  (func (export "lockhost_abi_version") (result i32)
    (i32.const 1))

  ;; try "raw" for ttl_ms, flags 0: handle > 0, 0 contended, -code
  (func (export "take") (param $ttl_ms i32) (result i32)
    (call $try (global.get $KEY) (global.get $KEY_LEN) (local.get $ttl_ms) (i32.const 0)))

  ;; the same with FLAG_KEEP: the lock outlives this call
  (func (export "takeKept") (param $ttl_ms i32) (result i32)
    (call $try (global.get $KEY) (global.get $KEY_LEN) (local.get $ttl_ms) (global.get $FLAG_KEEP)))

  (func (export "fence") (param $h i32) (result i64)
    (call $fence (local.get $h)))

  (func (export "renew") (param $h i32) (param $ttl_ms i32) (result i32)
    (call $renew (local.get $h) (local.get $ttl_ms)))

  (func (export "release") (param $h i32) (result i32)
    (call $release (local.get $h)))

  ;; length of the owner token (written at OWNER_BUF when it fits), or -code
  (func (export "ownerLen") (param $h i32) (result i32)
    (call $owner (local.get $h) (global.get $OWNER_BUF) (i32.const 64)))

  ;; length of the last error message (written at ERR_BUF when it fits)
  (func (export "lastErrorLen") (result i32)
    (call $last_error (global.get $ERR_BUF) (i32.const 256)))
)
