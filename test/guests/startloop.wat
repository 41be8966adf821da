;; A guest whose start function never returns: the host must give up on instantiating it
;; within the plugin's call_timeout_ms instead of hanging its own start.
(module
  (import "env" "memory" (memory 1))
  (func $spin (loop $forever (br $forever)))
  (start $spin)
  (func (export "lockhost_abi_version") (result i32) (i32.const 1))
  (func (export "run")))
