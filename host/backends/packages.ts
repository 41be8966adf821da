// Loads the backend packages a config names (`[locking] packages`) and registers their
// descriptors, so `[locking] backend` can name them and `[locking.<name>]` is validated by
// their own schema. (Stub: implemented by the backend-kit work.)

/**
 * Imports each package (resolved from `fromDir`, the config file's folder, then from lockhost's
 * own install) and registers the BackendDescriptor(s) it exports (`default`, `backend` or
 * `backends`).
 * @throws LockhostError CONFIG_INVALID naming `[locking] packages` and the package when it
 *   cannot be found, fails to load, or exports no descriptor.
 */
export async function loadBackendPackages(specifiers: readonly string[], fromDir: string): Promise<void> {
  void specifiers;
  void fromDir;
}
