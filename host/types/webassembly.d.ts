// The part of the WebAssembly JS API lockhost uses. TypeScript ships these types only in its
// DOM libs and @types/node does not declare them, so they are declared here rather than
// pulling the whole DOM into a Node project.
declare namespace WebAssembly {
  type ImportExportKind = "function" | "table" | "memory" | "global" | "tag";
  interface ModuleImportDescriptor {
    readonly module: string;
    readonly name: string;
    readonly kind: ImportExportKind;
  }
  interface ModuleExportDescriptor {
    readonly name: string;
    readonly kind: ImportExportKind;
  }
  class Module {
    constructor(bytes: BufferSource);
    static imports(module: Module): ModuleImportDescriptor[];
    static exports(module: Module): ModuleExportDescriptor[];
  }
  type ExportValue = ((...args: unknown[]) => unknown) | Memory | object;
  type Exports = Record<string, ExportValue>;
  type ImportValue = ((...args: never[]) => unknown) | Memory | number;
  type Imports = Record<string, Record<string, ImportValue>>;
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Exports;
  }
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer;
    grow(delta: number): number;
  }
  class RuntimeError extends Error {}
  class CompileError extends Error {}
  class LinkError extends Error {}
  function compile(bytes: BufferSource): Promise<Module>;
  function instantiate(module: Module, imports?: Imports): Promise<Instance>;
  function validate(bytes: BufferSource): boolean;
}
