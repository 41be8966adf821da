// The service files of examples/ (docs/deploy.md): the systemd unit, checked by systemd's own
// `systemd-analyze verify` where it is installed (.ci/run installs it) and always against the
// keys lockhost needs; the Kubernetes manifests, whose probes, ports, grace period, mounts and
// secrets must agree with the TOML their ConfigMap holds, read by lockhost's own config reader.
import { execFile, spawnSync } from "node:child_process";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../host/config/load.js";
import { HOST_SCHEMA } from "../host/config/tables.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "lockhost-deploy-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Whether systemd's unit checker is installed (Debian's systemd package has it). */
const HAS_SYSTEMD_ANALYZE = spawnSync("sh", ["-c", "command -v systemd-analyze"]).status === 0;

// ---- systemd ----------------------------------------------------------------------------

const UNIT = join(root, "examples/systemd/lockhost.service");
/** Where the unit expects the command (npm install -g with the default prefix). */
const UNIT_COMMAND = "/usr/local/bin/lockhost";

/** The keys each section may have: every one the unit uses is a documented systemd key (systemd.unit(5), .service(5), .exec(5), .kill(5)). */
const UNIT_KEYS: Record<string, readonly string[]> = {
  Unit: ["Description", "Documentation", "Wants", "Requires", "After", "Before", "StartLimitIntervalSec", "StartLimitBurst"],
  Service: [
    ...["Type", "NotifyAccess", "ExecStart", "ExecReload", "ExecStop", "EnvironmentFile", "Environment", "WorkingDirectory"],
    ...["KillSignal", "KillMode", "TimeoutStartSec", "TimeoutStopSec", "Restart", "RestartSec", "RestartPreventExitStatus", "LimitNOFILE"],
    ...["DynamicUser", "User", "Group", "NoNewPrivileges", "CapabilityBoundingSet", "AmbientCapabilities", "ProtectSystem", "ProtectHome"],
    ...["ReadOnlyPaths", "ReadWritePaths", "InaccessiblePaths", "PrivateTmp", "PrivateDevices", "ProtectKernelTunables", "ProtectKernelModules"],
    ...["ProtectKernelLogs", "ProtectControlGroups", "ProtectClock", "ProtectHostname", "ProtectProc", "RestrictNamespaces", "RestrictRealtime"],
    ...["RestrictSUIDSGID", "LockPersonality", "RestrictAddressFamilies", "SystemCallArchitectures", "SystemCallFilter", "SystemCallErrorNumber"],
    ...["UMask", "MemoryDenyWriteExecute", "LoadCredential"],
  ],
  Install: ["WantedBy", "Alias"],
};

/** A unit file as sections of key -> values (a key may repeat), with the line of each; "\" continues a line. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let section: Map<string, string[]> | undefined;
  const lines = text.replace(/\\\n/g, " ").split("\n");
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) return;
    const header = /^\[([A-Za-z]+)\]$/.exec(line);
    if (header) {
      if (sections.has(header[1]!)) throw new Error(`line ${i + 1}: section [${header[1]}] twice`);
      sections.set(header[1]!, (section = new Map()));
      return;
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!kv || !section) throw new Error(`line ${i + 1}: not "Key=value" inside a section: ${line}`);
    const values = section.get(kv[1]!) ?? [];
    values.push(kv[2]!);
    section.set(kv[1]!, values);
  });
  return sections;
}

describe("examples/systemd/lockhost.service", () => {
  it("has only known keys, and the ones lockhost needs: Type=notify, SIGHUP reload, a stop timeout above shutdown_timeout_ms, hardening", async () => {
    const unit = parseUnit(await readFile(UNIT, "utf8"));
    expect([...unit.keys()]).toEqual(["Unit", "Service", "Install"]);
    for (const [name, keys] of unit) {
      const unknown = [...keys.keys()].filter((k) => !UNIT_KEYS[name]!.includes(k));
      expect(unknown, `[${name}]`).toEqual([]);
    }
    const service = unit.get("Service")!;
    const one = (key: string): string => {
      expect(service.get(key), key).toHaveLength(1);
      return service.get(key)![0]!;
    };
    expect(one("Type")).toBe("notify");
    // systemd-notify, a child of lockhost, sends the messages (host/cli/notify.ts).
    expect(one("NotifyAccess")).toBe("all");
    expect(one("ExecStart")).toBe(`${UNIT_COMMAND} run --config /etc/lockhost/lockhost.toml --log-format json`);
    expect(one("ExecReload")).toBe("/bin/kill -HUP $MAINPID");
    expect(one("Restart")).toBe("on-failure");
    expect(one("EnvironmentFile")).toBe("-/etc/lockhost/lockhost.env");
    // The graceful stop's budget, with room: systemd's SIGKILL must not cut a release short.
    const stopMs = Number(/^(\d+)s?$/.exec(one("TimeoutStopSec"))![1]) * 1000;
    const shutdownDefault = HOST_SCHEMA.fields.shutdownTimeoutMs.default as number;
    expect(stopMs).toBeGreaterThan(shutdownDefault);
    for (const key of ["DynamicUser", "NoNewPrivileges", "PrivateTmp", "PrivateDevices", "ProtectHome", "RestrictSUIDSGID"]) expect(one(key), key).toBe("yes");
    expect(one("ProtectSystem")).toBe("strict");
    expect(one("ReadOnlyPaths")).toBe("/etc/lockhost");
    expect(one("CapabilityBoundingSet")).toBe("");
    // V8 writes machine code: this one would stop every Node process.
    expect(service.has("MemoryDenyWriteExecute")).toBe(false);
  });

  // Named by what it can check here: .ci/run installs systemd, so CI runs systemd's own check.
  const verifyName = HAS_SYSTEMD_ANALYZE
    ? "passes systemd-analyze verify, and its exposure score is low (systemd-analyze security)"
    : "NOT verified by systemd-analyze (it is not on PATH here): its keys were checked against the known ones only";
  it(verifyName, async () => {
    if (!HAS_SYSTEMD_ANALYZE) {
      console.warn("deploy.test: systemd-analyze is not on PATH; examples/systemd/lockhost.service was checked against the known keys only");
      const unit = parseUnit(await readFile(UNIT, "utf8"));
      for (const [name, keys] of unit) expect([...keys.keys()].filter((k) => !UNIT_KEYS[name]!.includes(k))).toEqual([]);
      return;
    }
    // verify checks that ExecStart's command exists and can run: an executable that runs this build's CLI.
    const command = join(dir, "lockhost");
    await writeFile(command, `#!/bin/sh\nexec "${process.execPath}" "${join(root, "dist/host/cli/main.js")}" "$@"\n`);
    await chmod(command, 0o755);
    const unit = join(dir, "lockhost.service");
    await writeFile(unit, (await readFile(UNIT, "utf8")).replaceAll(UNIT_COMMAND, command));
    const verify = await run("systemd-analyze", ["verify", unit]).catch((e: { stdout: string; stderr: string; code: number }) => e);
    // It exits 0 even on unknown keys; any line it prints is a finding.
    expect({ stdout: verify.stdout.trim(), stderr: verify.stderr.trim() }).toEqual({ stdout: "", stderr: "" });
    const security = await run("systemd-analyze", ["security", "--offline=yes", "--no-pager", unit]);
    const score = Number(/Overall exposure level for lockhost\.service: ([\d.]+)/.exec(security.stdout)?.[1]);
    // 0 is sealed, 10 is exposed; "OK" is below 4 (the unit measured 1.8 on systemd 252).
    expect(score, security.stdout).toBeLessThan(3);
  });
});

// ---- Kubernetes ----------------------------------------------------------------------------

type Yaml = string | number | boolean | null | Yaml[] | { [key: string]: Yaml };

/**
 * Reads the YAML the manifests are written in: block mappings and sequences by indentation,
 * plain, quoted and flow-sequence (JSON) scalars, `|` literal blocks, comments and `---`
 * between documents. Not a YAML parser: anything else fails the test, so a manifest that
 * strays from this subset is noticed.
 */
function readYaml(text: string): Yaml[] {
  return text.split(/^---$/m).map((doc) => {
    const lines = doc.split("\n");
    let i = 0;
    const indentOf = (line: string): number => line.length - line.trimStart().length;
    const significant = (): number | undefined => {
      while (i < lines.length && (lines[i]!.trim() === "" || lines[i]!.trim().startsWith("#"))) i++;
      return i < lines.length ? indentOf(lines[i]!) : undefined;
    };
    const scalar = (text: string): Yaml => {
      const t = text.replace(/\s+#.*$/, "").trim();
      if (t.startsWith('"') || t.startsWith("[")) return JSON.parse(t) as Yaml;
      if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
      if (t === "true" || t === "false") return t === "true";
      if (t === "null" || t === "~") return null;
      if (/^['{&*!|>]/.test(t)) throw new Error(`readYaml: not in the subset: ${t}`);
      return t;
    };
    const node = (indent: number): Yaml => (lines[i]!.trimStart().startsWith("- ") ? sequence(indent) : mapping(indent));
    const literal = (parent: number): string => {
      const block: string[] = [];
      while (i < lines.length && (lines[i]!.trim() === "" || indentOf(lines[i]!) > parent)) block.push(lines[i++]!);
      while (block.length > 0 && block.at(-1)!.trim() === "") block.pop();
      const cut = Math.min(...block.filter((l) => l.trim() !== "").map(indentOf));
      return `${block.map((l) => l.slice(cut)).join("\n")}\n`;
    };
    const mapping = (indent: number): Yaml => {
      const map: Record<string, Yaml> = {};
      while (significant() === indent && !lines[i]!.trimStart().startsWith("- ")) {
        const m = /^([A-Za-z0-9_.\-/]+):(?:\s+(.*))?$/.exec(lines[i]!.trim());
        if (!m) throw new Error(`readYaml: line "${lines[i]}" is not "key: value"`);
        if (m[1]! in map) throw new Error(`readYaml: key ${m[1]} twice`);
        i++;
        const rest = m[2]?.replace(/^#.*$/, "").trim() ?? "";
        if (rest === "|") map[m[1]!] = literal(indent);
        else if (rest !== "") map[m[1]!] = scalar(rest);
        else {
          const child = significant();
          if (child === undefined || child <= indent) throw new Error(`readYaml: ${m[1]} has no value`);
          map[m[1]!] = node(child);
        }
      }
      return map;
    };
    const sequence = (indent: number): Yaml => {
      const list: Yaml[] = [];
      while (significant() === indent && lines[i]!.trimStart().startsWith("- ")) {
        const item = lines[i]!.trimStart().slice(2);
        if (/^[A-Za-z0-9_.\-/]+:(\s|$)/.test(item)) {
          // "- key: value": a mapping whose first line is the rest, two columns in.
          lines[i] = `${" ".repeat(indent + 2)}${item}`;
          list.push(mapping(indent + 2));
        } else {
          i++;
          list.push(scalar(item));
        }
      }
      return list;
    };
    const start = significant();
    if (start === undefined) return null;
    const value = node(start);
    if (significant() !== undefined) throw new Error(`readYaml: line "${lines[i]}" is outside the document's structure`);
    return value;
  });
}

/** A manifest's object at `path` (keys, list indexes), failing the test with the path when missing. */
function at(doc: Yaml, ...path: (string | number)[]): Yaml {
  let here: Yaml = doc;
  for (const step of path) {
    const isMap = here !== null && typeof here === "object" && !Array.isArray(here);
    const next = typeof step === "number" ? (Array.isArray(here) ? here[step] : undefined) : isMap ? (here as Record<string, Yaml>)[step] : undefined;
    if (next === undefined) throw new Error(`no ${path.join(".")} (stopped at ${step})`);
    here = next;
  }
  return here;
}

describe("examples/kubernetes", () => {
  const read = async (file: string): Promise<Yaml[]> => readYaml(await readFile(join(root, "examples/kubernetes", file), "utf8"));

  it("reads back what the subset reader is meant to read", () => {
    expect(readYaml('a:\n  b: 1\n  c: "x" # note\n  d:\n    - e: true\n      f: [1, "2"]\n    - plain\n  g: |\n    one\n      two\n---\nh: i\n')).toEqual([
      { a: { b: 1, c: "x", d: [{ e: true, f: [1, "2"] }, "plain"], g: "one\n  two\n" } },
      { h: "i" },
    ]);
    expect(() => readYaml("a: {b: 1}\n")).toThrow(/subset/);
  });

  it("has a Deployment whose probes, port, grace period, mounts and secrets agree with the TOML of its ConfigMap", async () => {
    const [configMap] = await read("configmap.yaml");
    const [secret] = await read("secret.yaml");
    const [deployment, budget] = await read("deployment.yaml");
    const [kustomization] = await read("kustomization.yaml");
    expect(at(kustomization!, "resources")).toEqual(["configmap.yaml", "secret.yaml", "deployment.yaml"]);
    expect(at(configMap!, "kind")).toBe("ConfigMap");
    expect(at(secret!, "kind")).toBe("Secret");
    expect(at(deployment!, "kind")).toBe("Deployment");
    expect(at(budget!, "kind")).toBe("PodDisruptionBudget");
    expect(at(deployment!, "spec", "replicas")).toBe(2);

    const pod = at(deployment!, "spec", "template", "spec");
    const containers = at(pod, "containers") as Yaml[];
    expect(containers).toHaveLength(1);
    const container = containers[0]!;

    // The config the container reads: the ConfigMap's key, mounted where --config points.
    const args = at(container, "args") as string[];
    const configPath = args[args.indexOf("--config") + 1]!;
    const mount = (at(container, "volumeMounts") as Yaml[]).find((m) => at(m, "name") === "config")!;
    const volume = (at(pod, "volumes") as Yaml[]).find((v) => at(v, "name") === "config")!;
    expect(at(volume, "configMap", "name")).toBe(at(configMap!, "metadata", "name"));
    const key = configPath.slice(`${at(mount, "mountPath") as string}/`.length);
    expect(`${at(mount, "mountPath") as string}/${key}`).toBe(configPath);
    const toml = at(configMap!, "data", key) as string;

    // Every ${VAR} of the TOML is set: from the Secret (envFrom) or the container's env.
    const secretKeys = Object.keys(at(secret!, "stringData") as object);
    expect(at(container, "envFrom", 0, "secretRef", "name")).toBe(at(secret!, "metadata", "name"));
    const envNames = (at(container, "env") as Yaml[]).map((e) => at(e, "name"));
    const vars = [...toml.matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]!);
    expect(vars.length).toBeGreaterThan(0);
    for (const v of vars) expect(secretKeys.includes(v) || envNames.includes(v), `\${${v}} is set by neither the Secret nor env`).toBe(true);

    // lockhost's own reader takes the TOML, with the Secret's values.
    const file = join(dir, "configmap-lockhost.toml");
    await writeFile(file, toml);
    const env = { ...(at(secret!, "stringData") as Record<string, string>), LOCKHOST_NODE: "lockhost-7d9f-abcde" };
    const config = await loadConfig(file, env);
    expect(config.admin, "the probes need the admin listener").toBeDefined();
    expect(config.admin!.listen.host).toBe("0.0.0.0");

    // Both probes on the admin listener's port, on the paths lockhost serves.
    const port = (at(container, "ports") as Yaml[]).find((p) => at(p, "name") === "admin")!;
    expect(at(port, "containerPort")).toBe(config.admin!.listen.port);
    for (const [probe, path] of [
      ["livenessProbe", "/livez"],
      ["readinessProbe", "/readyz"],
      ["startupProbe", "/livez"],
    ] as const) {
      expect(at(container, probe, "httpGet", "path"), probe).toBe(path);
      expect(at(container, probe, "httpGet", "port"), probe).toBe("admin");
    }

    // SIGTERM's graceful stop fits in the grace period, with room.
    const graceMs = (at(pod, "terminationGracePeriodSeconds") as number) * 1000;
    expect(graceMs).toBeGreaterThan(config.host.shutdownTimeoutMs);

    // Not root, nothing written to the image, no privileges, bounded resources.
    expect(at(pod, "securityContext", "runAsNonRoot")).toBe(true);
    expect(at(container, "securityContext", "readOnlyRootFilesystem")).toBe(true);
    expect(at(container, "securityContext", "allowPrivilegeEscalation")).toBe(false);
    expect(at(container, "securityContext", "capabilities", "drop")).toEqual(["ALL"]);
    expect(at(container, "resources", "requests", "memory")).toBeTypeOf("string");
    expect(at(container, "resources", "limits", "memory")).toBeTypeOf("string");
    // A rollout starts a new host before it stops an old one.
    expect(at(deployment!, "spec", "strategy", "rollingUpdate", "maxUnavailable")).toBe(0);
    const labels = at(deployment!, "spec", "selector", "matchLabels");
    expect(at(deployment!, "spec", "template", "metadata", "labels")).toEqual(labels);
    expect(at(budget!, "spec", "selector", "matchLabels")).toEqual(labels);
  });
});

// ---- the container image -------------------------------------------------------------------

describe("examples/container/Dockerfile", () => {
  it("runs lockhost itself (exec form, so SIGTERM reaches it) as a user that is not root", async () => {
    const lines = (await readFile(join(root, "examples/container/Dockerfile"), "utf8")).split("\n").filter((l) => l !== "" && !l.startsWith("#"));
    const instruction = (name: string): string[] => lines.filter((l) => l.startsWith(`${name} `)).map((l) => l.slice(name.length + 1));
    expect(instruction("USER")).toEqual(["node"]);
    expect(JSON.parse(instruction("ENTRYPOINT")[0]!)).toEqual(["lockhost"]);
    expect(JSON.parse(instruction("CMD")[0]!)).toEqual(["run", "--config", "/etc/lockhost/lockhost.toml", "--log-format", "json"]);
    // The config path the Kubernetes example mounts.
    const [deployment] = readYaml(await readFile(join(root, "examples/kubernetes/deployment.yaml"), "utf8"));
    expect(at(deployment!, "spec", "template", "spec", "containers", 0, "args")).toEqual(JSON.parse(instruction("CMD")[0]!));
  });
});
