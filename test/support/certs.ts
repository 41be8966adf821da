// Certificates for TLS tests, made with openssl into a temp dir: a CA, a server certificate it
// signed for 127.0.0.1 and localhost, a client certificate it signed, and a second CA that
// signed nothing here (what a host that trusts the wrong CA has). Real files, real handshakes.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findBinary } from "./servers.js";

/** Paths of the PEM files of one test PKI. */
export interface TestCerts {
  readonly dir: string;
  /** The CA that signed server and client. */
  readonly ca: string;
  /** Server certificate (SAN IP:127.0.0.1, DNS:localhost) and key. */
  readonly serverCert: string;
  readonly serverKey: string;
  /** Client certificate (CN lockhost, the user name PostgreSQL's cert auth maps) and key. */
  readonly clientCert: string;
  readonly clientKey: string;
  /** A CA that signed neither. */
  readonly otherCa: string;
  /** Removes the directory. */
  remove(): void;
}

function openssl(args: string[], cwd: string): void {
  const bin = findBinary("openssl", [], "install openssl (Debian: apt install openssl)");
  const r = spawnSync(bin, args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed (${r.status}):\n${r.stderr}`);
}

/**
 * Makes a test PKI in a new temp dir.
 * @param clientName the client certificate's CN (PostgreSQL's `cert` auth takes it as the user).
 * @param owner uid/gid to give the server key to (PostgreSQL refuses a key it does not own).
 */
export function makeTestCerts(clientName = "lockhost", owner?: { uid: number; gid: number }): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-certs-"));
  const ca = (name: string): void => {
    openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "2", "-subj", `/CN=${name}`], dir);
  };
  const signed = (name: string, cn: string, ext: string): void => {
    openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${cn}`], dir);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      [
        "x509",
        "-req",
        "-in",
        `${name}.csr`,
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        `${name}.pem`,
        "-days",
        "2",
        "-extfile",
        `${name}.ext`,
      ],
      dir,
    );
  };
  ca("ca");
  ca("other-ca");
  signed("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  signed("client", clientName, "basicConstraints=CA:FALSE\n");
  if (owner) {
    for (const f of ["server.key", "server.pem", "ca.pem"]) chownSync(join(dir, f), owner.uid, owner.gid);
    chmodSync(dir, 0o755);
  }
  chmodSync(join(dir, "server.key"), 0o600);
  return {
    dir,
    ca: join(dir, "ca.pem"),
    serverCert: join(dir, "server.pem"),
    serverKey: join(dir, "server.key"),
    clientCert: join(dir, "client.pem"),
    clientKey: join(dir, "client.key"),
    otherCa: join(dir, "other-ca.pem"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
