// The backends this process can create, by name. The host knows backends only through the
// descriptors registered here; the composition roots (package entry, CLI entry) register the
// built-ins, and a config's backend packages register theirs, through the same call.
import type { BackendDescriptor } from "../../kit/descriptor.js";
import { LockhostError } from "../../kit/errors.js";

const BACKEND_NAME = /^[a-z][a-z0-9_-]{0,63}$/;
/** Table names under [locking] that belong to the lock service, never to a backend. */
const RESERVED = new Set(["backend", "backends", "packages", "keepalive", "waiting"]);

const registry = new Map<string, BackendDescriptor>();

/**
 * Makes `descriptor` available to configs under its name. Registering the same descriptor
 * twice is a no-op; another descriptor under a taken name is refused.
 * @throws LockhostError CONFIG_INVALID for a bad or taken name.
 */
export function registerBackend(descriptor: BackendDescriptor): void {
  // Checked at run time too: a package's export is whatever it is.
  const d: Partial<Record<keyof BackendDescriptor, unknown>> = descriptor ?? {};
  if (typeof d.name !== "string" || !BACKEND_NAME.test(d.name) || RESERVED.has(d.name)) {
    throw new LockhostError(
      "CONFIG_INVALID",
      `backend name ${JSON.stringify(d.name)} must match ${BACKEND_NAME} and not be one of ${[...RESERVED].join(", ")}`,
    );
  }
  if (typeof d.create !== "function" || typeof d.config !== "object" || d.config === null) {
    throw new LockhostError("CONFIG_INVALID", `backend ${d.name} is not a BackendDescriptor (it needs name, config and create)`);
  }
  const had = registry.get(d.name);
  if (had && had !== descriptor) throw new LockhostError("CONFIG_INVALID", `a backend named ${d.name} is registered already`);
  registry.set(d.name, descriptor);
}

/** The descriptor registered under `name`, if any. */
export function backendDescriptor(name: string): BackendDescriptor | undefined {
  return registry.get(name);
}

/** Every registered backend's name, in registration order. */
export function backendNames(): string[] {
  return [...registry.keys()];
}
