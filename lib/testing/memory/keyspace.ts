/*
 * The data of an in-memory server, with Redis' semantics for what the lock's scripts use: strings
 * (and counters), sorted sets and hashes, each with an optional expiry on the server's clock. Expiry
 * is checked when a key is read, as Redis does on access (no timers); a sorted set or hash that
 * loses its last member is deleted, as in Redis (EXISTS on a queue depends on it).
 */

type Kind = 'string' | 'zset' | 'hash';

interface Entry {
  kind: Kind;
  /** A string; a sorted set's members and scores; a hash's fields and values. */
  value: string | Map<string, number | string>;
  /** The server's clock (ms) after which the key is gone; Infinity without expiry. */
  expiresAt: number;
}

declare const image: unique symbol;
/**
 * A point-in-time copy of a keyspace ({@link Keyspace.snapshot}): what an AOF held at its last
 * fsync, what a lagging replica had when it was promoted. Opaque.
 */
export type KeyspaceImage = { readonly [image]: true };

/** The keyspace of one server; the clock it expires keys by is the server's ({@link timeUs}). */
export abstract class Keyspace {
  private entries = new Map<string, Entry>();

  /** The server's clock in microseconds (what TIME gives the scripts). */
  abstract timeUs(): number;

  /** The server's clock in whole milliseconds (key expiry). */
  nowMs(): number {
    return Math.floor(this.timeUs() / 1000);
  }

  /** GET (undefined when missing, or not a string). */
  get(key: string): string | undefined {
    const entry = this.live(key);
    return entry?.kind === 'string' ? (entry.value as string) : undefined;
  }

  /** SET key value [PX ttlMs] [NX]: whether it was set. Without a ttl the key never expires. */
  set(key: string, value: string, ttlMs?: number, onlyIfMissing = false): boolean {
    if (onlyIfMissing && this.live(key)) return false;
    const expiresAt = ttlMs === undefined ? Infinity : this.nowMs() + ttlMs;
    this.entries.set(key, { kind: 'string', value, expiresAt });
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
    const set = this.members<number>(key, 'zset', true)!;
    if (set.has(member)) return 0;
    set.set(member, score);
    return 1;
  }

  /** ZREM: whether the member was there. */
  zrem(key: string, member: string): boolean {
    return this.remove(key, 'zset', member);
  }

  /** ZPOPMIN: the first `[member, score]`, removed. */
  zpopmin(key: string): [string, number] | undefined {
    const [first] = this.zrange(key);
    if (first) this.zrem(key, first[0]);
    return first;
  }

  /** ZRANGE key 0 -1 WITHSCORES: `[member, score]` in Redis' order (by score, then member). */
  zrange(key: string): Array<[string, number]> {
    const members = [...(this.members<number>(key, 'zset') ?? [])];
    return members.sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0));
  }

  zscore(key: string, member: string): number | undefined {
    return this.members<number>(key, 'zset')?.get(member);
  }

  hset(key: string, field: string, value: string): void {
    this.members<string>(key, 'hash', true)!.set(field, value);
  }

  hget(key: string, field: string): string | undefined {
    return this.members<string>(key, 'hash')?.get(field);
  }

  /** HDEL: whether the field was there. */
  hdel(key: string, field: string): boolean {
    return this.remove(key, 'hash', field);
  }

  /** HGETALL: `[field, value]` pairs, in insertion order (as Redis keeps a small hash). */
  hgetall(key: string): Array<[string, string]> {
    return [...(this.members<string>(key, 'hash') ?? [])];
  }

  type(key: string): Kind | 'none' {
    return this.live(key)?.kind ?? 'none';
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

  /** A copy of every key as it is now (expiry times included: they are absolute, as in an AOF). */
  snapshot(): KeyspaceImage {
    return copyEntries(this.entries) as unknown as KeyspaceImage;
  }

  /** Replaces every key with those of `image` (a restart from an AOF, a promoted replica). */
  restore(image: KeyspaceImage): void {
    this.entries = copyEntries(image as unknown as Map<string, Entry>);
  }

  /** FLUSHALL: drops every key. */
  flushAll(): void {
    this.entries.clear();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt !== Infinity && entry.expiresAt < this.nowMs()) this.entries.delete(key);
    else return entry;
    return undefined;
  }

  /** The members of the sorted set or hash at `key` (none of another kind; created when asked). */
  private members<V>(key: string, kind: Kind, create = false): Map<string, V> | undefined {
    const entry = this.live(key);
    if (entry || !create) return entry?.kind === kind ? (entry.value as Map<string, V>) : undefined;
    const value = new Map<string, number | string>();
    this.entries.set(key, { kind, value, expiresAt: Infinity });
    return value as Map<string, V>;
  }

  /** Removes a member; a sorted set or hash left empty is deleted, as in Redis. */
  private remove(key: string, kind: Kind, member: string): boolean {
    const members = this.members(key, kind);
    const had = members?.delete(member) ?? false;
    if (members?.size === 0) this.entries.delete(key);
    return had;
  }
}

function copyEntries(entries: ReadonlyMap<string, Entry>): Map<string, Entry> {
  const copy = new Map<string, Entry>();
  for (const [key, { kind, value, expiresAt }] of entries)
    copy.set(key, { kind, value: typeof value === 'string' ? value : new Map(value), expiresAt });
  return copy;
}
