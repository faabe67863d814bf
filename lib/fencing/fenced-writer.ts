import { luaScript } from '../core/scripts/lua.js';
import { runScript } from '../core/voter/send.js';
import { type ServerSend } from '../core/voter/server.js';
import { invalidFencingTokenMessage, isFencingToken } from './fencing-token.js';
import { storeSend, type FencedStoreClient } from './store-client.js';

/** Outcome of a fenced write. */
export interface FencedWriteResult {
  /** True when no higher token had read or written the key, and the write was applied. */
  readonly accepted: boolean;
  /** The highest token that has read or written this key, after the call (ours when accepted). */
  readonly lastToken: number;
}

/** Outcome of a fenced read. */
export interface FencedReadResult {
  /** False when a higher token has already read or written the key: this holder is stale. */
  readonly accepted: boolean;
  /** The hash's fields (without the fence field); empty when the key does not exist. */
  readonly fields: Record<string, string>;
  /** The highest token that has read or written this key, after the call. */
  readonly lastToken: number;
}

/**
 * Read: raise the hash's fence field to the token (unless a higher one is there) and return the
 * hash. KEYS: hash. ARGV: fence field, token. Returns {accepted 1/0, fence, field1, value1, ...}.
 */
const FENCED_HGETALL = `
local stored = redis.call('HGET', KEYS[1], ARGV[1]) or '0'
local last = tonumber(stored)
local token = tonumber(ARGV[2])
local accepted = 0
if token >= last then
  accepted = 1
  -- Recorded even on a missing key: a first write must not come from an older reader.
  if token > last then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
end
-- The stored string, not tostring(last): Lua prints a number with 14 digits, a token has 16.
local out = {accepted, accepted == 1 and ARGV[2] or stored}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if all[i] ~= ARGV[1] then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
`;

/**
 * Write: set the fields only if no higher token has read or written the hash, and record the
 * token. KEYS: hash. ARGV: fence field, token, field1, value1, ... Returns {accepted 1/0, fence}.
 */
const FENCED_HSET = `
local last = redis.call('HGET', KEYS[1], ARGV[1])
if last and tonumber(last) > tonumber(ARGV[2]) then return {0, last} end
local args = {ARGV[1], ARGV[2]}
for i = 3, #ARGV do args[#args + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(args))
return {1, ARGV[2]}
`;

/**
 * The writer's two scripts. Exported for the in-memory store of `nest-quorum-lock/testing`, which
 * answers them (not part of the package's public API).
 */
export const FENCED_WRITER_SCRIPTS = {
  read: luaScript('fenced-hgetall', FENCED_HGETALL),
  write: luaScript('fenced-hset', FENCED_HSET),
};

/**
 * The protected-resource side of fencing, for data kept in Redis hashes. Reads and writes carry
 * the lock's fencing token; the hash keeps the highest token that has read or written it, and
 * refuses a holder whose token is lower: a holder that was paused past its lease (GC, swap, a
 * stopped VM) can neither overwrite its successor's work nor write back a value computed from a
 * read its successor has since superseded. Fence the read too in a read-modify-write:
 *
 * ```ts
 * const store = new FencedWriter(redis);
 * const { fields } = await store.hgetall(`account:${id}`, lock.fencingToken);
 * const { accepted } = await store.hset(`account:${id}`, { balance: Number(fields.balance) - 10 }, lock.fencingToken);
 * ```
 * The same rule for rows in PostgreSQL: `FencedTable` from `nest-quorum-lock/postgres`.
 */
export class FencedWriter {
  private readonly redis: ServerSend;

  /**
   * @param redis the store's connection: an ioredis `Redis` or `Cluster`, a node-redis client or
   * cluster, or a Valkey GLIDE client or cluster client (a `TypeError` for anything else).
   */
  constructor(
    redis: FencedStoreClient,
    /** Hash field that keeps the highest token seen. */
    readonly fenceField = 'fence',
    /** @internal A store's raw commands instead of a client's (the in-memory writer of the testing entry). */
    send?: ServerSend,
  ) {
    this.redis = send ?? storeSend(redis);
  }

  /** Reads the hash, recording `token` as its newest reader; refused if a higher token came first. */
  async hgetall(key: string, token: number): Promise<FencedReadResult> {
    checkToken(token);
    const args = [this.fenceField, String(token)];
    const reply = (await runScript(this.redis, FENCED_WRITER_SCRIPTS.read, [key], args)) as Array<
      number | string
    >;
    const fields: Record<string, string> = {};
    for (let i = 2; i < reply.length; i += 2) fields[String(reply[i])] = String(reply[i + 1]);
    return { accepted: reply[0] === 1, fields, lastToken: Number(reply[1]) };
  }

  /**
   * HSET `fields` on `key` unless a higher token has read or written it (atomic). `fields` cannot
   * hold the fence field (a `TypeError`): the writer sets it to `token` itself.
   */
  async hset(
    key: string,
    fields: Readonly<Record<string, string | number>>,
    token: number,
  ): Promise<FencedWriteResult> {
    checkToken(token);
    if (Object.hasOwn(fields, this.fenceField))
      throw new TypeError(
        `A fenced write cannot set the fence field "${this.fenceField}": the writer sets it to the token itself.`,
      );
    const args = [
      this.fenceField,
      String(token),
      ...Object.entries(fields).flatMap(([f, v]) => [f, String(v)]),
    ];
    const reply = (await runScript(this.redis, FENCED_WRITER_SCRIPTS.write, [key], args)) as [number, string];
    return { accepted: reply[0] === 1, lastToken: Number(reply[1]) };
  }
}

function checkToken(token: number): void {
  if (!isFencingToken(token)) throw new TypeError(invalidFencingTokenMessage(token));
}
