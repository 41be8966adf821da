// Makes the backend a config names, through its registered descriptor: the host's one way to a
// backend, so it never knows a concrete one.
import type { Logger } from "pino";
import type { LockBackend } from "../../kit/backend.js";
import type { BackendDescriptor } from "../../kit/descriptor.js";
import { LockhostError } from "../../kit/errors.js";
import { completeDefaultsOf } from "../../kit/schema.js";
import type { LockingConfig } from "../config/types.js";
import { backendDescriptor, backendNames } from "./registry.js";

/**
 * The descriptor `[locking] backend` names.
 * @throws LockhostError CONFIG_INVALID when no backend of that name is registered.
 */
export function chosenBackend(locking: Pick<LockingConfig, "backend">): BackendDescriptor {
  const descriptor = backendDescriptor(locking.backend);
  if (!descriptor) {
    throw new LockhostError(
      "CONFIG_INVALID",
      `[locking] backend ${JSON.stringify(locking.backend)} is not registered (registered: ${backendNames().join(", ") || "none"}; a third-party ` +
        `backend is named in [locking] packages)`,
    );
  }
  return descriptor;
}

/**
 * Creates the backend `[locking] backend` names, with its `[locking.<name>]` table (its defaults
 * when a config built in code left it out). Connections open in the background: a backend that
 * cannot reach its server fails each call with BACKEND_UNAVAILABLE, never here.
 * @param source the config file, for the backend's messages.
 */
export async function createBackend(locking: LockingConfig, log: Logger, source?: string): Promise<LockBackend> {
  const descriptor = chosenBackend(locking);
  const table = (locking as Readonly<Record<string, unknown>>)[descriptor.name] ?? completeDefaultsOf(descriptor.config);
  return descriptor.create(table, { log: log.child({ backend: descriptor.name }), ...(source !== undefined && { source }) });
}
