;; Invalid guest: defines and exports its own memory instead of importing env.memory.
;; The host must refuse it (it could not cap the memory's size).
(module
  (memory (export "memory") 1)
  (func (export "lockhost_abi_version") (result i32)
    (i32.const 1))
  (func (export "run")))
