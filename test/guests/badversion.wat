;; Invalid guest: claims ABI version 99. The host must refuse it, naming the version.
(module
  (import "env" "memory" (memory 1))
  (func (export "lockhost_abi_version") (result i32)
    (i32.const 99))
  (func (export "run")))
