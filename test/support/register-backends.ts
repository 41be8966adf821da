// Tests import host modules directly rather than the package entry, so the built-in backends
// are registered here, for every test file, as the composition roots register them.
import { registerBackend } from "../../host/registry/registry.js";
import { BUILTIN_BACKENDS } from "../../plugins/backends/index.js";

for (const descriptor of BUILTIN_BACKENDS) registerBackend(descriptor);
