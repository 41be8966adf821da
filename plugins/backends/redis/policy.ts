// A one-time look at the server's eviction policy. Fence counters never expire, so only an
// allkeys-* policy can evict one; an evicted counter starts again at 1, and fences would no
// longer keep increasing: the one guarantee a fence exists for. Warn rather than refuse: the
// operator may not be able to change a managed server's policy, and exclusion still holds.
import { Cluster, type Redis } from "ioredis";
import type { Logger } from "pino";

/**
 * Logs a warning when the server may evict keys without a TTL; on a cluster, each primary is
 * asked (fence counters are spread over all of them, and each has its own config). Never throws.
 */
export async function warnIfEvictingFences(client: Redis | Cluster, log: Logger, url: string): Promise<void> {
  if (!(client instanceof Cluster)) return checkNode(client, log, url);
  await Promise.all(client.nodes("master").map((node) => checkNode(node, log, url, `${node.options.host}:${node.options.port}`)));
}

/** @param node a cluster node's host:port; absent for a single server. */
async function checkNode(redis: Redis, log: Logger, url: string, node?: string): Promise<void> {
  try {
    const info = await redis.info("memory");
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy?.startsWith("allkeys-")) {
      log.warn(
        { url, ...(node && { node }), maxmemoryPolicy: policy },
        `redis at ${node ?? url} uses maxmemory-policy ${policy}: under memory pressure it may evict fence counters, and fences would restart at 1; use noeviction or a volatile-* policy`,
      );
    }
  } catch {
    // INFO may be renamed or denied by an ACL; the check is advisory.
  }
}
