/** Suffixes of the keys kept beside a lock key, under its hash tag (the scripts derive them). */
export const FENCE_SUFFIX = ':fence';
export const QUEUE_SUFFIX = ':queue';
/**
 * A semaphore's slot keys (semaphore.ts) are its lock key + PERMIT_INFIX + the permit's number;
 * every slot shares one queue, the lock key + PERMITS_QUEUE_SUFFIX.
 */
export const PERMIT_INFIX = ':permit:';
export const PERMITS_QUEUE_SUFFIX = ':permits:queue';
/** The prefix of the marker a semaphore keeps in its lock key: the marker is this + its permits. */
export const PERMITS_MARK = '~permits:';

/** The key of slot `permit` of the semaphore whose lock key is `lockKey`. */
export function slotKey(lockKey: string, permit: number): string {
  return lockKey + PERMIT_INFIX + permit;
}

/**
 * The queue of a lock key: its own for a plain lock's key, the semaphore's shared one for a slot
 * key (its lock key + PERMIT_INFIX + a number). A plain lock's key built here ends with its hash
 * tag's '}': one character read on the mutex path.
 */
export function queueKeyOf(key: string): string {
  if (key.charCodeAt(key.length - 1) !== 125) {
    const at = key.lastIndexOf(PERMIT_INFIX);
    if (at > 0 && at > key.lastIndexOf('}')) return key.slice(0, at) + PERMITS_QUEUE_SUFFIX;
  }
  return key + QUEUE_SUFFIX;
}
/**
 * A read-write lock's readers (scripts/read.ts): a hash beside the lock key, reader value -> the
 * voter's clock (ms) at which that reader's lease ends; while readers hold, the lock key itself
 * holds READ_MARKER (with the longest reader's lease), so a writer finds it busy.
 */
export const READERS_SUFFIX = ':readers';
/** What a lock key holds while readers hold it ('~' and no ':': never a lock value or a turn). */
export const READ_MARKER = '~read';

/** The readers hash of a lock key (see READERS_SUFFIX). */
export function readersKeyOf(lockKey: string): string {
  return lockKey + READERS_SUFFIX;
}

/** The restart-guard marker's name after the prefix. */
export const GUARD_MARKER_NAME = '__restart_guard__';

/**
 * Key names. Each resource gets its own hash tag, so the keys kept beside its lock key (fence
 * counter, queue) hash to the same slot as the lock key.
 */
export class KeySpace {
  /** The restart-guard marker: one per node, never expires. */
  readonly guardMarker: string;

  constructor(readonly prefix: string) {
    this.guardMarker = prefix + GUARD_MARKER_NAME;
  }

  lock(resource: string): string {
    return `${this.prefix}{${resource}}`;
  }
}
