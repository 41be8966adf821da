;; A guest whose start function calls lock.try: nothing serves lock calls while a module
;; instantiates. The worker runtime answers -INVALID_ARGUMENT (kept in a global, read by the
;; export); the inline runtime cannot suspend a start function and refuses the module, saying why.
(module
  (import "env" "memory" (memory 1))
  (import "lock" "try" (func $try (param i32 i32 i32 i32) (result i32)))
  (data (i32.const 16) "early")
  (global $early (mut i32) (i32.const 0))
  (func $start (global.set $early (call $try (i32.const 16) (i32.const 5) (i32.const 10000) (i32.const 0))))
  (start $start)
  (func (export "lockhost_abi_version") (result i32) (i32.const 1))
  (func (export "early") (result i32) (global.get $early)))
