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

  /** The channel the release script publishes on (lock key + `:released`). */
  releaseChannel(resource: string): string {
    return `${this.lock(resource)}:released`;
  }
}
