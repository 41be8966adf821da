// cluster-key-slot (the slot function ioredis itself routes Cluster commands with) ships no
// types; this is the one function lockhost calls.
declare module "cluster-key-slot" {
  /** The Redis Cluster slot (0..16383) of `key`, honouring a `{hash tag}` as Redis does. */
  export default function keySlot(key: string): number;
}
