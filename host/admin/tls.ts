// HTTPS for the admin listener: [admin] cert_file and key_file, and client_ca_file for mutual
// TLS. The files are read and checked when the listener starts; a file that cannot be read or
// does not hold what it should fails the start with CONFIG_INVALID naming the key, the file
// and the reason.
import { readFileSync } from "node:fs";
import { createSecureContext, type SecureContextOptions } from "node:tls";
import type { ServerOptions } from "node:https";
import { LockhostError } from "../../kit/errors.js";
import type { AdminSettings } from "../config/types.js";

/** The https.createServer options of `settings`; undefined when it sets no certificate (plain HTTP). */
export function adminTls(settings: AdminSettings): ServerOptions | undefined {
  const { certFile, keyFile, clientCaFile } = settings;
  if (certFile === undefined || keyFile === undefined) return undefined;
  const cert = pemFile("cert_file", certFile, "CERTIFICATE");
  const key = pemFile("key_file", keyFile, "PRIVATE KEY");
  const ca = clientCaFile === undefined ? undefined : pemFile("client_ca_file", clientCaFile, "CERTIFICATE");
  const options: SecureContextOptions = { cert, key, ...(ca && { ca }) };
  // OpenSSL says what it refused: a key that does not match the certificate, a broken PEM.
  usable({ cert, key }, `cert_file ${certFile} and key_file ${keyFile}`);
  if (ca !== undefined) usable({ ca }, `client_ca_file ${clientCaFile}`);
  return {
    ...options,
    minVersion: "TLSv1.2",
    ...(ca && { requestCert: true, rejectUnauthorized: true }),
  };
}

function usable(options: SecureContextOptions, files: string): void {
  try {
    createSecureContext(options);
  } catch (err) {
    throw new LockhostError("CONFIG_INVALID", `[admin] ${files}: not usable (${(err as Error).message})`);
  }
}

/** The text of a PEM file that holds a block of `label` ("CERTIFICATE", "PRIVATE KEY"). */
export function pemFile(key: string, path: string, label: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new LockhostError("CONFIG_INVALID", `[admin] ${key}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(text)) {
    throw new LockhostError("CONFIG_INVALID", `[admin] ${key}: ${path} holds no PEM ${label.toLowerCase()} (-----BEGIN ...${label}-----)`);
  }
  return text;
}
