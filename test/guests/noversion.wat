;; Invalid guest: no lockhost_abi_version export. The host must refuse it.
(module
  (import "env" "memory" (memory 1))
  (func (export "run")))
