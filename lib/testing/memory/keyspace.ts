/*
 * The data of an in-memory server, with Redis' semantics for what the lock's scripts use: strings
 * (and counters), sorted sets and hashes, each with an optional expiry on the server's clock. Expiry
 * is checked when a key is read, as Redis does on access (no timers); a sorted set or hash that
 * loses its last member is deleted, as in Redis (EXISTS on a queue depends on it).
 */

/** A sorted set's members, in Redis' order (by score, then member): `[member, score]`. */
type SortedSet = Array<[string, number]>;

interface Entry {
  value: string | SortedSet | Map<string, string>;
  /** The server's clock (ms) after which the key is gone; Infinity without expiry. */
  expiresAt: number;
}

/** The keyspace of one server; the clock it expires keys by is the server's ({@link timeUs}). */
export abstract class Keyspace {
  private readonly entries = new Map<string, Entry>();

  /** The server's clock in microseconds (what TIME gives the scripts). */
  abstract timeUs(): number;

  /** The server's clock in whole milliseconds (key expiry). */
  nowMs(): number {
    return Math.floor(this.timeUs() / 1000);
  }

  /** GET (undefined when missing, or not a string). */
  get(key: string): string | undefined {
    const value = this.live(key)?.value;
    return typeof value === 'string' ? value : undefined;
  }

  /** SET key value [PX ttlMs] [NX]: whether it was set. Without a ttl the key never expires. */
  set(key: string, value: string, ttlMs?: number, onlyIfMissing = false): boolean {
    if (onlyIfMissing && this.live(key)) return false;
    this.entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : this.nowMs() + ttlMs });
    return true;
  }

  /** PTTL: remaining ms, -1 without expiry, -2 when missing. */
  pttl(key: string): number {
    const entry = this.live(key);
    if (!entry) return -2;
    return entry.expiresAt === Infinity ? -1 : Math.max(0, entry.expiresAt - this.nowMs());
  }

  /** PEXPIRE (a ttl of 0 or less deletes the key): 1 when the key exists. */
  pexpire(key: string, ttlMs: number): number {
    const entry = this.live(key);
    if (!entry) return 0;
    if (ttlMs <= 0) this.entries.delete(key);
    else entry.expiresAt = this.nowMs() + ttlMs;
    return 1;
  }

  /** DEL: 1 when the key existed. */
  del(key: string): number {
    return this.live(key) && this.entries.delete(key) ? 1 : 0;
  }

  exists(key: string): boolean {
    return this.live(key) !== undefined;
  }

  /** INCR (keeps the key's expiry; a missing key counts from 0). */
  incr(key: string): number {
    const entry = this.live(key);
    const next = Number(entry?.value ?? 0) + 1;
    if (entry) entry.value = String(next);
    else this.set(key, String(next));
    return next;
  }

  /** ZADD key NX score member: 1 when added. */
  zadd(key: string, score: number, member: string): number {
    const set = this.collection(key, () => [] as SortedSet)!;
    if (set.some(([m]) => m === member)) return 0;
    const at = set.findIndex(([m, s]) => s > score || (s === score && m > member));
    set.splice(at < 0 ? set.length : at, 0, [member, score]);
    return 1;
  }

  /** ZREM: whether the member was there. */
  zrem(key: string, member: string): boolean {
    const set = this.collection<SortedSet>(key);
    const at = set?.findIndex(([m]) => m === member) ?? -1;
    if (at >= 0) this.drop(key, set!, set!.splice(at, 1));
    return at >= 0;
  }

  /** ZPOPMIN: the first `[member, score]`, removed. */
  zpopmin(key: string): [string, number] | undefined {
    const set = this.collection<SortedSet>(key);
    return set && this.drop(key, set, set.shift());
  }

  /** ZRANGE key 0 -1 WITHSCORES: a copy of the members in order. */
  zrange(key: string): SortedSet {
    return [...(this.collection<SortedSet>(key) ?? [])];
  }

  zscore(key: string, member: string): number | undefined {
    return this.collection<SortedSet>(key)?.find(([m]) => m === member)?.[1];
  }

  hset(key: string, field: string, value: string): void {
    this.collection(key, () => new Map<string, string>())!.set(field, value);
  }

  hget(key: string, field: string): string | undefined {
    return this.collection<Map<string, string>>(key)?.get(field);
  }

  /** HDEL: whether the field was there. */
  hdel(key: string, field: string): boolean {
    const hash = this.collection<Map<string, string>>(key);
    return hash !== undefined && this.drop(key, hash, hash.delete(field));
  }

  /** HGETALL: `[field, value]` pairs, in insertion order (as Redis keeps a small hash). */
  hgetall(key: string): Array<[string, string]> {
    return [...(this.collection<Map<string, string>>(key) ?? [])];
  }

  /** TYPE. */
  type(key: string): 'string' | 'zset' | 'hash' | 'none' {
    const value = this.live(key)?.value;
    return value === undefined
      ? 'none'
      : typeof value === 'string'
        ? 'string'
        : Array.isArray(value)
          ? 'zset'
          : 'hash';
  }

  /** KEYS / SCAN MATCH: the live keys matching a glob pattern (`*`, `?`, `\` escapes). */
  keys(pattern = '*'): string[] {
    const source = pattern.replace(/\\(.)|([*?])|[^\\*?]/gs, (c: string, escaped?: string, glob?: string) => {
      if (glob) return glob === '*' ? '[\\s\\S]*' : '[\\s\\S]';
      return (escaped ?? c).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    });
    const match = new RegExp(`^${source}$`);
    return [...this.entries.keys()].filter((key) => match.test(key) && this.live(key));
  }

  /** FLUSHALL: drops every key. */
  flushAll(): void {
    this.entries.clear();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt < this.nowMs()) this.entries.delete(key);
    else return entry;
    return undefined;
  }

  /** The sorted set or hash at `key` (created by `create` when missing). */
  private collection<T extends SortedSet | Map<string, string>>(
    key: string,
    create?: () => T,
  ): T | undefined {
    const entry = this.live(key);
    if (entry) return typeof entry.value === 'string' ? undefined : (entry.value as T);
    if (!create) return undefined;
    const value = create();
    this.entries.set(key, { value, expiresAt: Infinity });
    return value;
  }

  /** Deletes `key` once `collection` is empty (as Redis does); returns `result`. */
  private drop<R>(key: string, collection: SortedSet | Map<string, string>, result: R): R {
    if ((Array.isArray(collection) ? collection.length : collection.size) === 0) this.entries.delete(key);
    return result;
  }
}
