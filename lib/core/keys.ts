/** Suffixes of the keys kept beside a lock key, under its hash tag (the scripts derive them). */
export const FENCE_SUFFIX = ':fence';
export const QUEUE_SUFFIX = ':queue';
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
