;; A guest taking strings as UTF-8 (ptr, len), by hand, for the host's checks: its allocator
;; answers 0 (full) for more than 100 bytes, counts what the host frees, and its
;; lockhost_schedules_utf8 points outside memory.
(module
  (import "env" "memory" (memory 1))
  (global $frees (mut i32) (i32.const 0))
  (func (export "lockhost_abi_version") (result i32) (i32.const 1))
  (func (export "lockhost_alloc_utf8") (param $len i32) (result i32)
    (select (i32.const 0) (i32.const 1024) (i32.gt_u (local.get $len) (i32.const 100))))
  (func (export "lockhost_free_utf8") (param $ptr i32) (param $len i32)
    (global.set $frees (i32.add (global.get $frees) (i32.const 1))))
  (func (export "frees") (result i32) (global.get $frees))
  ;; take(s: string, n: i32): the first byte of s plus n, or n for the empty string (ptr 0)
  (func (export "take") (param $ptr i32) (param $len i32) (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $len))
      (then (local.get $n))
      (else (i32.add (i32.load8_u (local.get $ptr)) (local.get $n)))))
  ;; len 5 at 65534: past the end of the one page
  (func (export "lockhost_schedules_utf8") (result i64) (i64.const 0x000000050000fffe)))
