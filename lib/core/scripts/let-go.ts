import { luaScript } from './lua.js';
import { PROMOTE_LUA } from './queue.js';
import { TURN_MARK } from './keys.js';

/** How a caller lets go of lock keys. */
export type LetGo =
  /** A holder's release, or a failed attempt of a caller that does not wait. */
  | { readonly op: 'release' }
  /**
   * A failed attempt of a caller that waits on at `ticket`, under `renamedTo` if given. `passOn`
   * (with `renamedTo`, to a voter that answered the attempt busy): a key it holds for the old value
   * now was handed over since, and goes to the new value.
   */
  | {
      readonly op: 'requeue';
      readonly ticket: string;
      readonly renamedTo?: string;
      readonly passOn?: boolean;
    }
  /** A waiter that gives up. */
  | { readonly op: 'leave-queue' };

/** A holder's release (one shared instance: it is on every lock's path). */
export const RELEASE: LetGo = Object.freeze({ op: 'release' });

/**
 * Lua function let_go(key, fence, queue, value, op, ticket, renamed, pass_on): one resource's let-go
 * (see LET_GO); 1 when it let go of something that counts. ARGV[2] must be the settings (promote).
 */
const LET_GO_LUA = `${PROMOTE_LUA}
local function let_go(key, fence, queue, value, op, ticket, renamed, pass_on)
  local current = redis.call('GET', key)
  local queued = redis.call('EXISTS', queue) == 1
  local had = queued and redis.call('ZREM', queue, value) == 1
  local mine = current == value or (op ~= 'requeue' and current == '${TURN_MARK}' .. value)
  if op == 'requeue' and (had or (mine and (queued or pass_on))) then
    redis.call('ZADD', queue, 'NX', ticket, renamed)
  end
  if mine then
    local hand = (queued or pass_on) and (op ~= 'requeue' or renamed ~= value)
    if not (hand and promote(key, fence, queue, value)) then redis.call('DEL', key) end
  end
  if (had and op == 'leave-queue') or (mine and op ~= 'leave-queue') then return 1 end
  return 0
end
`;

/**
 * Letting go of lock keys, three ways; each frees only keys that hold the caller's value (never
 * another holder's) and hands what it frees to the first in line (queue.ts).
 * KEYS, n resources: lock keys 1..n, fence counters n+1..2n, queues 2n+1..3n.
 * ARGV: value, settings, op, and for a requeue the ticket, the value it waits on under and, to pass
 * a hand-over on, '1'.
 * - release (op 'release'): a holder's release, or a failed attempt of a caller that does not wait.
 *   A holder may also find its own turn, or its own entry in a queue (an earlier attempt left it):
 *   both go, or they would keep the node from voting until they lapsed.
 * - requeue: a failed attempt of a caller that waits on: it frees what it got (acquirers that split
 *   the nodes must not keep their shares) and keeps its place in line, under a new value when given
 *   (then what it frees goes to the first in line, maybe itself under that value). To a node that
 *   answered the attempt busy, the key can hold the old value only because a release reached it
 *   between the attempt and this requeue and handed it over, taking the value out of the queue:
 *   passed on (ARGV[6]), that hand-over goes to the new value, also when nobody else waits. Not where
 *   the attempt was granted: handing the caller what its own attempt got would have it try again
 *   at once, again and again, while another holds the majority.
 * - leave-queue: a waiter gives up; if the lock or its turn was handed to it, the next one gets it.
 * Replies with a count nobody reads.
 */
export const LET_GO = luaScript(
  'let-go',
  `${LET_GO_LUA}
local value = ARGV[1]
local renamed = ARGV[5] or value
local pass_on = ARGV[6] == '1' and renamed ~= value
local n = #KEYS / 3
local count = 0
for i = 1, n do
  count = count + let_go(KEYS[i], KEYS[n + i], KEYS[2 * n + i], value, ARGV[3], ARGV[4], renamed, pass_on)
end
return count
`,
  { allowOom: true },
);

/**
 * Releases of several single-resource locks in one call: a voter's releases of one tick (the
 * engine's release batch, voter/batches.ts), each as LET_GO's release of its one resource.
 * KEYS, per lock: its lock key, fence counter and queue. ARGV: the lock count, the settings, then
 * each lock's value. Replies with a count nobody reads.
 */
export const RELEASE_MANY = luaScript(
  'release-many',
  `${LET_GO_LUA}
local count = 0
for j = 1, tonumber(ARGV[1]) do
  count = count + let_go(KEYS[3 * j - 2], KEYS[3 * j - 1], KEYS[3 * j], ARGV[j + 2], 'release')
end
return count
`,
  { allowOom: true },
);
