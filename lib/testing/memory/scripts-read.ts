import { READ_MARKER, isReader } from '../../core/scripts/keys.js';
import type { LuaScript } from '../../core/scripts/lua.js';
import * as lua from '../../core/scripts/read.js';
import {
  abstention,
  clockReadings,
  enqueue,
  nextToken,
  num,
  promote,
  setting,
  type Emulation,
} from './scripts.js';
import type { MemoryServer } from './server.js';

/*
 * The read-write lock's scripts (scripts/read.ts) emulated: readers share the lock key, which holds
 * READ_MARKER with the longest reader's lease; each reader's own lease is an entry in the readers
 * hash (value -> the server's clock, ms, at which it ends).
 */

/** live_until: forgets the readers whose lease ended; when the last live one's ends (0: none). */
function liveUntil(db: MemoryServer, readers: string, nowMs: number): number {
  let latest = 0;
  for (const [reader, ends] of db.hgetall(readers)) {
    if (Number(ends) <= nowMs) db.hdel(readers, reader);
    else latest = Math.max(latest, Number(ends));
  }
  return latest;
}

const readAcquire: Emulation = (db, keys, args) => {
  const [[key, fence, queue, readers, marker], [value, settings, ttl, ticket, seed]] = [keys, args];
  let queued = db.exists(queue);
  let current = db.get(key);
  if (current === undefined && queued) {
    promote(db, [key, fence, queue], value, settings);
    current = db.get(key);
    queued = db.exists(queue);
  }
  const [nowMs, clockUs] = [db.nowMs(), db.timeUs()];
  let busy: number | undefined;
  let holder = current ?? null;
  if (current !== undefined && current !== READ_MARKER) busy = db.pttl(key);
  else if (queued) {
    const mine = db.zscore(queue, value) ?? num(ticket);
    const writer = db.zrange(queue).find(([waiting]) => !isReader(waiting));
    if (writer && (mine === undefined || writer[1] < mine)) {
      busy = current === undefined ? -1 : db.pttl(key);
      holder = writer[0];
    }
  }
  if (busy !== undefined) {
    enqueue(db, [queue], ticket, value, settings);
    return [0, busy, holder, clockUs];
  }
  let token = num(db.get(fence));
  if (token === undefined) {
    const next = nextToken(db, fence, settings, marker, num(seed));
    if (next.abstain !== undefined) return abstention(next);
    token = next.token;
  }
  db.hset(readers, value, String(nowMs + Number(ttl)));
  if (db.pttl(key) < Number(ttl)) db.set(key, READ_MARKER, Number(ttl));
  if (db.pttl(readers) < Number(ttl)) db.pexpire(readers, Number(ttl));
  if (queued) db.zrem(queue, value);
  return clockReadings(settings) ? [2, token, clockUs] : token;
};

const readExtend: Emulation = (db, [key, readers], [value, ttl, clock]) => {
  const [nowMs, clockUs] = [db.nowMs(), db.timeUs()];
  const ends = num(db.hget(readers, value));
  const ok = db.get(key) === READ_MARKER && ends !== undefined && ends > nowMs;
  if (ok) {
    db.hset(readers, value, String(nowMs + Number(ttl)));
    const latest = liveUntil(db, readers, nowMs);
    db.pexpire(key, latest - nowMs);
    db.pexpire(readers, latest - nowMs);
  }
  if (clock !== undefined) return ok ? clockUs : -clockUs;
  return ok ? 1 : 0;
};

const readLetGo: Emulation = (db, [key, fence, queue, readers], [value, settings, op, ticket, renamed]) => {
  const queued = db.exists(queue);
  const mine = db.hdel(readers, value);
  if (queued) {
    const had = db.zrem(queue, value);
    if (op === 'requeue' && (had || mine)) db.zadd(queue, Number(ticket), renamed ?? value);
  }
  if (!(mine && db.get(key) === READ_MARKER)) return mine ? 1 : 0;
  const nowMs = db.nowMs();
  const latest = liveUntil(db, readers, nowMs);
  if (latest > 0) db.pexpire(key, latest - nowMs);
  else if (!(queued && promote(db, [key, fence, queue], value, settings))) db.del(key);
  return 1;
};

const readRaiseFence: Emulation = (db, [key, fence, readers], [value, settings, token]) => {
  if (db.get(key) !== READ_MARKER || db.hget(readers, value) === undefined) return 0;
  const current = db.get(fence);
  if (current === undefined) return 0;
  if (Number(current) < Number(token)) db.set(fence, token, setting(settings, 'fenceIdleMs'));
  return 1;
};

const readInspect: Emulation = (db, [key, readers]) => {
  if (db.get(key) !== READ_MARKER) return [];
  const nowMs = db.nowMs();
  return db.hgetall(readers).flatMap(([reader, ends]) => (Number(ends) > nowMs ? [reader] : []));
};

export const READ_SCRIPTS: Array<[LuaScript, Emulation]> = [
  [lua.READ_ACQUIRE_SCRIPT, readAcquire],
  [lua.READ_EXTEND_SCRIPT, readExtend],
  [lua.READ_LET_GO_SCRIPT, readLetGo],
  [lua.READ_RAISE_FENCE_SCRIPT, readRaiseFence],
  [lua.READ_INSPECT_SCRIPT, readInspect],
];
