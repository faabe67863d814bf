import { luaScript } from './lua.js';

/** One lock to extend on a node: its keys, its value and the new lease. */
export interface ExtendRequest {
  readonly keys: readonly string[];
  readonly value: string;
  readonly ttlMs: number;
}

/**
 * A voter's answers to a batch of extensions: per lock, whether it extended it, and, when the
 * engine runs the clock guard, the node's clock in microseconds (one reading per call: the batch's
 * locks were extended at one instant there). A plain `boolean[]` is one without a clock (a voter
 * that does not read it, or the guard off): the property is set only when there is a reading.
 */
export type ExtendAnswers = boolean[] & { clockUs?: number };

/**
 * Extend every lock key on the node to ttl, only if all still hold our value.
 * KEYS: lock keys. ARGV: value, ttl ms, and `c` when the engine runs the clock guard.
 * Returns 1 when extended, 0 otherwise; with `c`, the node's clock in microseconds instead,
 * negated when not extended: a number, so the reply costs no table (this is every watchdog tick).
 * The clock of a refusal counts too: a step that expired the lock early is seen in that reply.
 */
export const EXTEND = luaScript(
  'extend',
  `
local ok = 1
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    ok = 0
    break
  end
end
if ok == 1 then
  for i = 1, #KEYS do
    redis.call('PEXPIRE', KEYS[i], ARGV[2])
  end
end
if ARGV[3] then
  local now = redis.call('TIME')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if ok == 1 then return clock end
  return -clock
end
return ok
`,
  { allowOom: true },
);

/**
 * EXTEND for many locks in one call (the watchdogs' batch for one node and one tick).
 * ARGV: lock count, then per lock: key count, value, ttl ms; then `c` when the engine runs the clock
 * guard. KEYS: the locks' keys, in order. Returns one 1/0 per lock, followed with `c` by the
 * node's clock in microseconds.
 */
export const EXTEND_MANY = luaScript(
  'extend-many',
  `
local out = {}
local k = 1
local a = 2
local count = tonumber(ARGV[1])
for i = 1, count do
  local keys = tonumber(ARGV[a])
  local value = ARGV[a + 1]
  local ttl = ARGV[a + 2]
  a = a + 3
  local ok = 1
  for j = k, k + keys - 1 do
    if redis.call('GET', KEYS[j]) ~= value then
      ok = 0
      break
    end
  end
  if ok == 1 then
    for j = k, k + keys - 1 do redis.call('PEXPIRE', KEYS[j], ttl) end
  end
  out[i] = ok
  k = k + keys
end
if ARGV[a] then
  local now = redis.call('TIME')
  out[count + 1] = tonumber(now[1]) * 1000000 + tonumber(now[2])
end
return out
`,
  { allowOom: true },
);

/** The argument that asks EXTEND and EXTEND_MANY for the node's clock. */
const CLOCK_FLAG = 'c';

/** EXTEND's arguments; `clock`: ask for the node's clock (the clock guard). */
export function extendArgs(request: ExtendRequest, clock = false): Array<string | number> {
  const args: Array<string | number> = [request.value, Math.ceil(request.ttlMs)];
  if (clock) args.push(CLOCK_FLAG);
  return args;
}

/** EXTEND_MANY's keys and arguments for a batch; `clock`: ask for the node's clock. */
export function extendManyCall(
  batch: readonly ExtendRequest[],
  clock = false,
): {
  keys: string[];
  args: Array<string | number>;
} {
  const keys: string[] = [];
  const args: Array<string | number> = [batch.length];
  for (const item of batch) {
    keys.push(...item.keys);
    args.push(item.keys.length, item.value, Math.ceil(item.ttlMs));
  }
  if (clock) args.push(CLOCK_FLAG);
  return { keys, args };
}

/** EXTEND's reply: whether the node extended the lock. */
export function decodeExtendReply(reply: unknown): boolean {
  return typeof reply === 'number' && reply > 0;
}

/** EXTEND's reply as the answers to a batch of one, with the node's clock when it carries one. */
export function decodeExtendOneReply(reply: unknown): ExtendAnswers {
  const answers: ExtendAnswers = [decodeExtendReply(reply)];
  // 1 and 0 carry no clock; a clock reading is far larger (microseconds since 1970).
  if (typeof reply === 'number' && (reply > 1 || reply < 0)) answers.clockUs = Math.abs(reply);
  return answers;
}

/** EXTEND_MANY's reply: per lock of the batch, whether the node extended it (and the node's clock). */
export function decodeExtendManyReply(reply: unknown, count: number): ExtendAnswers {
  const list = Array.isArray(reply) ? reply : [];
  const answers: ExtendAnswers = new Array<boolean>(count);
  for (let i = 0; i < count; i++) answers[i] = list[i] === 1;
  const clock: unknown = list[count];
  if (typeof clock === 'number') answers.clockUs = clock;
  return answers;
}
