// etcd's JSON gateway (/v3/...), for tests that act on etcd behind a backend's back: read a key,
// delete it, revoke or inspect a lease, compact, set up users. No client library: plain fetch.

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

/** POSTs `body` to `path` on `endpoint` and returns the JSON answer (throws with etcd's message on an error status). */
export async function gateway<T = Record<string, unknown>>(endpoint: string, path: string, body: object, token?: string): Promise<T> {
  const res = await fetch(`${endpoint}${path}`, {
    method: "POST",
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
    headers: token === undefined ? {} : { Authorization: token },
  });
  const json = (await res.json()) as T & { error?: string; message?: string };
  if (!res.ok) throw new Error(`${path}: ${json.message ?? json.error ?? res.status}`);
  return json;
}

/** The key's KeyValue (lease id and revisions as strings), or undefined. */
export async function readKey(endpoint: string, key: string): Promise<{ lease?: string; create_revision: string; mod_revision: string } | undefined> {
  const res = await gateway<{ kvs?: { lease?: string; create_revision: string; mod_revision: string }[] }>(endpoint, "/v3/kv/range", { key: b64(key) });
  return res.kvs?.[0];
}

/** The keys under `prefix`. */
export async function keysUnder(endpoint: string, prefix: string): Promise<string[]> {
  const end = Buffer.from(prefix, "utf8");
  end[end.length - 1]! += 1;
  const res = await gateway<{ kvs?: { key: string }[] }>(endpoint, "/v3/kv/range", { key: b64(prefix), range_end: end.toString("base64"), keys_only: true });
  return (res.kvs ?? []).map((kv) => Buffer.from(kv.key, "base64").toString("utf8"));
}

export const deleteKey = (endpoint: string, key: string): Promise<unknown> => gateway(endpoint, "/v3/kv/deleterange", { key: b64(key) });
export const revokeLease = (endpoint: string, id: string): Promise<unknown> => gateway(endpoint, "/v3/lease/revoke", { ID: id });

/** A lease's remaining and granted TTL in seconds (TTL -1: no such lease). */
export async function leaseTtl(endpoint: string, id: string): Promise<{ ttlS: number; grantedS: number }> {
  const res = await gateway<{ TTL?: string; grantedTTL?: string }>(endpoint, "/v3/lease/timetolive", { ID: id });
  return { ttlS: Number(res.TTL ?? -1), grantedS: Number(res.grantedTTL ?? 0) };
}

/** Writes `n` throwaway keys and compacts every revision before now (physically). */
export async function compactAll(endpoint: string, n = 5): Promise<number> {
  let revision = 0;
  for (let i = 0; i < n; i++) {
    const res = await gateway<{ header: { revision: string } }>(endpoint, "/v3/kv/put", { key: b64(`compact-filler/${i}`), value: b64("x") });
    revision = Number(res.header.revision);
  }
  await gateway(endpoint, "/v3/kv/compaction", { revision: String(revision), physical: true });
  return revision;
}

/** Turns authentication on with user root (password `password`), the only user. */
export async function enableAuth(endpoint: string, password: string): Promise<void> {
  await gateway(endpoint, "/v3/auth/role/add", { name: "root" });
  await gateway(endpoint, "/v3/auth/user/add", { name: "root", password });
  await gateway(endpoint, "/v3/auth/user/grant", { user: "root", role: "root" });
  await gateway(endpoint, "/v3/auth/enable", {});
}
