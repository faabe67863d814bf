import { luaScript } from './lua-script.js';

/** One lock to extend on a node: its keys, its value and the new lease. */
export interface ExtendRequest {
  readonly keys: readonly string[];
  readonly value: string;
  readonly ttlMs: number;
}

/**
 * Extend every lock key on the node to ttl, only if all still hold our value.
 * KEYS: lock keys. ARGV: value, ttl ms. Returns 1 when extended, 0 otherwise.
 */
export const EXTEND = luaScript(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
);

/**
 * EXTEND for many locks in one call (the watchdogs' batch for one node and one tick).
 * ARGV: lock count, then per lock: key count, value, ttl ms. KEYS: the locks' keys, in order.
 * Returns one 1/0 per lock.
 */
export const EXTEND_MANY = luaScript(
  'extend-many',
  `
local out = {}
local k = 1
local a = 2
for i = 1, tonumber(ARGV[1]) do
  local count = tonumber(ARGV[a])
  local value = ARGV[a + 1]
  local ttl = ARGV[a + 2]
  a = a + 3
  local ok = 1
  for j = k, k + count - 1 do
    if redis.call('GET', KEYS[j]) ~= value then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for j = k, k + count - 1 do redis.call('PEXPIRE', KEYS[j], ttl) end
  end
  out[i] = ok
  k = k + count
end
return out
`,
);

/** EXTEND's arguments. */
export function extendArgs(request: ExtendRequest): Array<string | number> {
  return [request.value, Math.ceil(request.ttlMs)];
}

/** EXTEND_MANY's keys and arguments for a batch. */
export function extendManyCall(batch: readonly ExtendRequest[]): {
  keys: string[];
  args: Array<string | number>;
} {
  const keys: string[] = [];
  const args: Array<string | number> = [batch.length];
  for (const item of batch) {
    keys.push(...item.keys);
    args.push(item.keys.length, item.value, Math.ceil(item.ttlMs));
  }
  return { keys, args };
}

/** EXTEND's reply: whether the node extended the lock. */
export function decodeExtendReply(reply: unknown): boolean {
  return reply === 1;
}

/** EXTEND_MANY's reply: per lock of the batch, whether the node extended it. */
export function decodeExtendManyReply(reply: unknown, count: number): boolean[] {
  const list = Array.isArray(reply) ? reply : [];
  return Array.from({ length: count }, (_, i) => list[i] === 1);
}
