/** `cluster-key-slot` (the slot function ioredis uses) ships no types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster slot of `key` (CRC16 of its hash tag, or of the whole key), 0-16383. */
  export default function calculateSlot(key: string): number;
}
