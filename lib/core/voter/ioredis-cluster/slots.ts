import { RedlockError, RedlockOptionsError } from '../../errors.js';

/*
 * Redis Cluster key slots, computed on the client: which slot a lock key lives in (to refuse a
 * multi-resource lock whose keys a single script cannot reach), and one restart-guard marker key
 * per slot (see cluster-voter.ts for why the marker is per slot).
 */

/** Number of hash slots of a Redis Cluster. */
export const SLOT_COUNT = 16384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/** CRC16-XMODEM, the checksum Redis Cluster hashes keys with. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/**
 * The slot of `key`, as Redis computes it: when the key has a `{` followed later by a `}` with
 * something between them, only the text between the FIRST `{` and the first `}` after it is
 * hashed (the hash tag).
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key, 'utf8')) % SLOT_COUNT;
}

let tags: string[] | undefined;

/**
 * A short string that hashes to `slot` (the same for every process): the hash tag of that slot's
 * restart-guard marker. The table is built once, on first use (about 170,000 CRCs, a few ms).
 */
export function slotTag(slot: number): string {
  if (!tags) {
    const table = new Array<string>(SLOT_COUNT);
    let found = 0;
    for (let i = 0; found < SLOT_COUNT; i++) {
      const candidate = i.toString(36);
      const s = crc16(Buffer.from(candidate, 'latin1')) % SLOT_COUNT;
      if (table[s] === undefined) {
        table[s] = candidate;
        found++;
      }
    }
    tags = table;
  }
  return tags[slot]!;
}

/** The restart-guard marker of `slot`: `<prefix>__restart_guard__{<tag of the slot>}`. */
export function slotMarkerKey(markerKey: string, slot: number): string {
  return `${markerKey}{${slotTag(slot)}}`;
}

/**
 * Throws when `keyPrefix` (seen through the marker key, which starts with it) holds a brace: its
 * hash tag would decide the slot of every key, which puts every lock on one shard and moves the
 * per-slot markers away from the locks they guard.
 */
export function assertClusterPrefix(markerKey: string, option: string): void {
  if (/[{}]/.test(markerKey)) {
    throw new RedlockOptionsError(
      'keyPrefix',
      `${option} is a Redis Cluster, and the key prefix "${markerKey.replace(/__restart_guard__$/, '')}" holds a brace`,
      'Use a prefix without { or }: each resource gets its own hash tag already, and a tag in the prefix would put every lock on one shard',
    );
  }
}

/**
 * A multi-resource lock whose resources hash to different slots of a Redis Cluster voter: no
 * single script can take all of its keys atomically there. Thrown by acquire, tryAcquire and
 * using before anything is sent; a programming error, not a busy lock: give the resources a
 * common hash tag.
 */
export class CrossSlotLockError extends RedlockError {
  /** Stable, machine-readable code. */
  readonly code = 'CROSS_SLOT_LOCK' as const;

  constructor(
    readonly resources: readonly string[],
    /** The cluster voter's label. */
    readonly node: string,
  ) {
    super(
      `Cannot lock ${resources.map((r) => `"${r}"`).join(', ')} together: on the Redis Cluster voter ${node} ` +
        "they live in different hash slots, and one voter must take all of a lock's keys in one atomic script. " +
        'Give them a common hash tag: start each resource with the same {tag}, e.g. "{order:42}:items" and ' +
        '"{order:42}:payment" (Redis hashes only the text between the first { and the next }).',
    );
  }
}

/** Throws {@link CrossSlotLockError} when the lock keys do not all share one slot. */
export function assertOneSlot(
  resources: readonly string[],
  lockKeys: readonly string[],
  node: string,
): number {
  const slot = keySlot(lockKeys[0]!);
  for (let i = 1; i < lockKeys.length; i++) {
    if (keySlot(lockKeys[i]!) !== slot) throw new CrossSlotLockError(resources, node);
  }
  return slot;
}
