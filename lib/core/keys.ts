/**
 * Key names. Each resource gets its own hash tag, so its lock key and its fence counter live in
 * the same slot (a Redis Cluster node can serve as a lock node too).
 */
export class KeySpace {
  /** The restart-guard marker: one per node, never expires. */
  readonly guardMarker: string;

  constructor(readonly prefix: string) {
    this.guardMarker = `${prefix}__restart_guard__`;
  }

  lock(resource: string): string {
    return `${this.prefix}{${resource}}`;
  }

  fence(resource: string): string {
    return `${this.prefix}{${resource}}:fence`;
  }

  /** Waiters for the lock key's resource, in ticket order (a sorted set). */
  queueOf(lockKey: string): string {
    return `${lockKey}:queue`;
  }

  /** Per waiter whose turn it is: the node time by which it must claim the free lock (a hash). */
  turnsOf(lockKey: string): string {
    return `${lockKey}:turns`;
  }

  /** The channel that wakes an engine's waiters: this prefix + the engine's value prefix. */
  get wakeChannelPrefix(): string {
    return `${this.prefix}__wake__:`;
  }
}
