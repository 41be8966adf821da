// AssemblyScript entry of the lockhost package: asc resolves `import … from "lockhost"` to
// node_modules/lockhost/index.ts (it does not read package.json's ascMain).
export * from "./abi/assembly/index";
