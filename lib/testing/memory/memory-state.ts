/*
 * The data of an in-memory voter: strings with a lease, counters and sorted sets, with Redis'
 * semantics for what the lock scripts use (expiry is checked when a key is read, as Redis does
 * on access; no timers, so nothing keeps a process alive).
 */

/**
 * The voter's clock: epoch milliseconds (fractions allowed), what Redis' TIME and key expiry
 * follow. The default is the process's clock; a test may pass its own to step time by hand (the
 * voter conformance table does: test/conformance/).
 */
export type MemoryClock = () => number;

const processClock: MemoryClock = () => performance.timeOrigin + performance.now();

interface Leased {
  value: string;
  /** Clock reading (ms) at which it expires; Infinity without expiry. */
  expiresAt: number;
}

/** One member of a sorted set. */
interface Member {
  readonly score: number;
  readonly member: string;
}

/** The keyspace of one in-memory voter. */
export class MemoryState {
  private readonly strings = new Map<string, Leased>();
  private readonly counters = new Map<string, number>();
  private readonly sets = new Map<string, Member[]>();
  private readonly channels = new Map<string, Set<(message: string) => void>>();
  /** Per lock key: its readers (value -> the clock reading, ms, at which the reader's lease ends). */
  private readonly readers = new Map<string, Map<string, number>>();
  private lastClockUs = 0;

  /** @param now The voter's clock (default: the process's); see {@link MemoryClock}. */
  constructor(private readonly now: MemoryClock = processClock) {}

  /** The voter's clock in microseconds, strictly increasing (what Redis TIME gives the scripts). */
  clockUs(): number {
    this.lastClockUs = Math.max(this.lastClockUs + 1, Math.floor(this.now() * 1000));
    return this.lastClockUs;
  }

  get(key: string): string | undefined {
    const entry = this.strings.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.strings.delete(key);
      return undefined;
    }
    return entry?.value;
  }

  /** SET key value PX ttl (NX: only when missing). Returns whether it was set. */
  set(key: string, value: string, ttlMs: number, onlyIfMissing = false): boolean {
    if (onlyIfMissing && this.get(key) !== undefined) return false;
    this.strings.set(key, { value, expiresAt: this.now() + ttlMs });
    return true;
  }

  /** PTTL: remaining ms, -1 without expiry, -2 when missing. */
  pttl(key: string): number {
    if (this.get(key) === undefined) return -2;
    const { expiresAt } = this.strings.get(key)!;
    return expiresAt === Infinity ? -1 : Math.max(0, Math.ceil(expiresAt - this.now()));
  }

  pexpire(key: string, ttlMs: number): void {
    const entry = this.strings.get(key);
    if (entry && this.get(key) !== undefined) entry.expiresAt = this.now() + ttlMs;
  }

  del(key: string): void {
    this.strings.delete(key);
  }

  counter(key: string): number | undefined {
    return this.counters.get(key);
  }

  setCounter(key: string, value: number): void {
    this.counters.set(key, value);
  }

  /** The next fencing token: a missing counter is seeded from the clock, as the scripts do. */
  nextToken(key: string): number {
    const current = this.counters.get(key);
    const token = current === undefined ? this.clockUs() : current + 1;
    this.counters.set(key, token);
    return token;
  }

  /** ZADD NX. */
  zadd(key: string, score: number, member: string): void {
    const set = this.sets.get(key) ?? [];
    if (set.some((m) => m.member === member)) return;
    const at = set.findIndex((m) => m.score > score || (m.score === score && m.member > member));
    set.splice(at < 0 ? set.length : at, 0, { score, member });
    this.sets.set(key, set);
  }

  /** ZSCORE: the member's score, undefined when it is not there. */
  zscore(key: string, member: string): number | undefined {
    return this.sets.get(key)?.find((m) => m.member === member)?.score;
  }

  /** ZRANGE 0 -1 WITHSCORES: the members in order. */
  zmembers(key: string): readonly Member[] {
    return this.sets.get(key) ?? [];
  }

  /** The voter's clock, ms (what reader leases are kept in). */
  clock(): number {
    return this.now();
  }

  /** HSET of a reader of `key`, whose lease ends at `endsAt` (clock ms). */
  setReader(key: string, value: string, endsAt: number): void {
    const readers = this.readers.get(key) ?? new Map<string, number>();
    readers.set(value, endsAt);
    this.readers.set(key, readers);
  }

  /** HGET: when the reader's lease ends; undefined when it is not a reader of `key`. */
  readerEnds(key: string, value: string): number | undefined {
    return this.readers.get(key)?.get(value);
  }

  /** HDEL: whether it was a reader of `key`. */
  deleteReader(key: string, value: string): boolean {
    return this.readers.get(key)?.delete(value) ?? false;
  }

  /** Forgets the readers of `key` whose lease ended; when the last live one's ends (0: none). */
  liveReadersUntil(key: string): number {
    const readers = this.readers.get(key);
    const now = this.now();
    let latest = 0;
    for (const [value, endsAt] of readers ?? []) {
      if (endsAt <= now) readers!.delete(value);
      else latest = Math.max(latest, endsAt);
    }
    if (readers?.size === 0) this.readers.delete(key);
    return latest;
  }

  /** The readers of `key` (live or not: call liveReadersUntil first). */
  readerValues(key: string): string[] {
    return [...(this.readers.get(key)?.keys() ?? [])];
  }

  /** ZREM: whether it was there. */
  zrem(key: string, member: string): boolean {
    const set = this.sets.get(key);
    const at = set?.findIndex((m) => m.member === member) ?? -1;
    if (at < 0) return false;
    set!.splice(at, 1);
    if (set!.length === 0) this.sets.delete(key);
    return true;
  }

  /** ZPOPMIN: the first member, removed. */
  zpopmin(key: string): string | undefined {
    const set = this.sets.get(key);
    const first = set?.shift();
    if (set?.length === 0) this.sets.delete(key);
    return first?.member;
  }

  exists(key: string): boolean {
    return this.get(key) !== undefined || this.sets.has(key) || this.counters.has(key);
  }

  /** SUBSCRIBE: returns how to unsubscribe. */
  subscribe(channel: string, listener: (message: string) => void): () => void {
    const listeners = this.channels.get(channel) ?? new Set();
    listeners.add(listener);
    this.channels.set(channel, listeners);
    return () => listeners.delete(listener);
  }

  /** PUBLISH: the number of listeners; delivered after the current operation, as Redis does after a script. */
  publish(channel: string, message: string): number {
    const listeners = [...(this.channels.get(channel) ?? [])];
    if (listeners.length > 0) queueMicrotask(() => listeners.forEach((listener) => listener(message)));
    return listeners.length;
  }

  /** Drops the whole keyspace (what FLUSHALL does to a Redis node). */
  flush(): void {
    this.strings.clear();
    this.counters.clear();
    this.sets.clear();
    this.readers.clear();
  }
}
