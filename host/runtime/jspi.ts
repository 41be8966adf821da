// Whether this Node can run a guest inline: WebAssembly JavaScript Promise Integration (JSPI)
// lets a guest wait on an async host function without a thread of its own. On by default in
// Node 26 (V8 13.7+), behind --experimental-wasm-jspi in Node 24, absent in Node 22.

/** Whether WebAssembly.Suspending and WebAssembly.promising exist in this process. */
export function jspiAvailable(): boolean {
  const wasm = WebAssembly as unknown as Record<string, unknown>;
  return typeof wasm.Suspending === "function" && typeof wasm.promising === "function";
}

/** What it takes to get JSPI, for an error message: names the Node version running now. */
export function jspiRequirement(): string {
  return `it needs WebAssembly JSPI: Node 26 or later, or Node 24 started with --experimental-wasm-jspi (this is Node ${process.versions.node})`;
}
