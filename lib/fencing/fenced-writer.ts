import type { Redis } from 'ioredis';
import { createHash } from 'node:crypto';

/** Outcome of a fenced write. */
export interface FencedWriteResult {
  /** True when the token was above the last accepted one and the write was applied. */
  readonly accepted: boolean;
  /** The highest token accepted for this key after the call (ours when accepted). */
  readonly lastToken: number;
}

/**
 * Atomically: write the hash fields only if `token` is higher than the token of the last accepted
 * write (kept in the hash's fence field), and record the token. One key, so it works on Redis
 * Cluster too. KEYS: hash. ARGV: fence field, token, field1, value1, ...
 */
const FENCED_HSET = `
local last = redis.call('HGET', KEYS[1], ARGV[1])
if last and tonumber(last) >= tonumber(ARGV[2]) then return {0, last} end
local args = {ARGV[1], ARGV[2]}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(args))
return {1, ARGV[2]}
`;
const FENCED_HSET_SHA = createHash('sha1').update(FENCED_HSET).digest('hex');

/**
 * The protected-resource side of fencing, for data kept in Redis: a write carries the lock's
 * fencing token and is refused when a higher token was already accepted, so a holder that was
 * paused past its lease (GC, swap, a stopped VM) cannot overwrite its successor's work.
 *
 * ```ts
 * const store = new FencedWriter(redis);
 * const { accepted } = await store.hset(`account:${id}`, { balance: next }, lock.fencingToken);
 * if (!accepted) throw new ConflictException('stale lock holder');
 * ```
 * The same rule in SQL: `UPDATE accounts SET balance = $1, fence = $2 WHERE id = $3 AND fence < $2`.
 */
export class FencedWriter {
  constructor(
    private readonly redis: Redis,
    /** Hash field that keeps the last accepted token. */
    readonly fenceField = 'fence',
  ) {}

  /** HSET `fields` on `key` if `token` is above the last accepted token (atomic). */
  async hset(
    key: string,
    fields: Readonly<Record<string, string | number>>,
    token: number,
  ): Promise<FencedWriteResult> {
    if (!Number.isSafeInteger(token) || token <= 0)
      throw new TypeError(`A fencing token must be a positive integer, got ${token}`);
    const args = [
      this.fenceField,
      String(token),
      ...Object.entries(fields).flatMap(([f, v]) => [f, String(v)]),
    ];
    let reply: [number, string];
    try {
      reply = (await this.redis.evalsha(FENCED_HSET_SHA, 1, key, ...args)) as [number, string];
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      reply = (await this.redis.eval(FENCED_HSET, 1, key, ...args)) as [number, string];
    }
    return { accepted: reply[0] === 1, lastToken: Number(reply[1]) };
  }
}
