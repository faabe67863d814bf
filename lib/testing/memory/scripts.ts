import { ACQUIRE, CLOCK_WINDOW_US } from '../../core/scripts/acquire.js';
import { EXTEND, EXTEND_MANY } from '../../core/scripts/extend.js';
import { RAISE_FENCE } from '../../core/scripts/fence.js';
import { INSPECT } from '../../core/scripts/inspect.js';
import { PERMITS_MARK, READ_MARKER } from '../../core/scripts/keys.js';
import { LET_GO } from '../../core/scripts/let-go.js';
import type { LuaScript } from '../../core/scripts/lua.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from '../../core/scripts/semaphore.js';
import {
  encodeWakeMessage,
  isMultiResource,
  isReader,
  TURN_MARK,
  wakeChannelOf,
} from '../../core/scripts/values.js';
import { GUARD_SCRIPTS } from './scripts-guards.js';
import { READ_SCRIPTS } from './scripts-read.js';
import type { MemoryServer } from './server.js';

/*
 * The lock's Lua scripts (lib/core/scripts/) in TypeScript, step for step, on a MemoryServer: the
 * same keys, arguments and replies (as ioredis decodes them on RESP2: a Lua false is null). Each
 * reads like its Lua; the differential test (test/integration/memory/) holds the two together.
 */

/** An emulated script: the server, KEYS and ARGV (0-based here), the reply. */
export type Emulation = (db: MemoryServer, keys: readonly string[], args: readonly string[]) => unknown;

/** The fields of the settings argument (scripts/settings.ts), by position. */
export const Setting = { GuardMs: 0, FenceIdleMs: 1, SeedWindowMs: 2, QueueIdleMs: 3, TurnMs: 4 } as const;

/** A field of the settings argument `settings`. */
export const setting = (settings: string, field: number): number => Number(settings.split(' ')[field]);
/** Whether the settings ask for clock readings (their last character is 1). */
export const clockReadings = (settings: string): boolean => settings.endsWith('1');
/** Lua's tonumber of an argument: undefined for '' (or none). */
export const num = (text: string | undefined): number | undefined => (text ? Number(text) : undefined);
/** string.format('%.0f', n). */
const fmt = (n: number) => n.toFixed(0);

/**
 * nextTokenLua (scripts/fence.ts): the next token of `fence`, seeding a missing counter from the
 * clock (or the proposal within the seed window) once the restart-guard `marker` has passed; a
 * hand-over (no marker) seeds nothing.
 */
export function nextToken(
  db: MemoryServer,
  fence: string,
  settings: string,
  marker?: string,
  proposal?: number,
): { token?: number; abstain?: number } {
  let token = db.incr(fence);
  if (token !== 1) {
    if (token % 64 === 0) db.pexpire(fence, setting(settings, Setting.FenceIdleMs));
    return { token };
  }
  if (marker === undefined) {
    db.del(fence);
    return {};
  }
  const ready = db.get(marker);
  let abstain: number | undefined;
  if (ready !== '0') {
    const guardMs = setting(settings, Setting.GuardMs);
    if (guardMs <= 0) db.set(marker, '0');
    else {
      const now = db.nowMs();
      const until = ready === undefined ? now + guardMs : Number(ready);
      if (ready === undefined) db.set(marker, fmt(until));
      if (now < until) abstain = until - now;
      else db.set(marker, '0');
    }
  }
  if (abstain !== undefined) {
    db.del(fence);
    return { abstain };
  }
  token = db.timeUs();
  if (proposal !== undefined && proposal > token)
    token = Math.min(proposal, token + setting(settings, Setting.SeedWindowMs) * 1000);
  db.set(fence, fmt(token), setting(settings, Setting.FenceIdleMs));
  return { token };
}

/** Queues `value` in each of `queues` by `ticket` (renewing their idle expiry), as a busy acquire does. */
export function enqueue(
  db: MemoryServer,
  queues: readonly string[],
  ticket: string,
  value: string,
  settings: string,
): void {
  if (ticket === '') return;
  const idle = setting(settings, Setting.QueueIdleMs);
  for (const queue of queues) {
    db.zadd(queue, Number(ticket), value);
    if (db.pttl(queue) < idle) db.pexpire(queue, idle);
  }
}

/** PROMOTE_LUA (scripts/queue.ts): hands `key` to the first in `queue` who listens; whether someone got it. */
export function promote(
  db: MemoryServer,
  key: string,
  fence: string,
  queue: string,
  cause: string,
  settings: string,
): boolean {
  const turnMs = setting(settings, Setting.TurnMs);
  const turn = (value: string) => encodeWakeMessage({ kind: 'turn', value, cause });
  for (let popped = db.zpopmin(queue); popped; popped = db.zpopmin(queue)) {
    const [head, score] = popped;
    if (isReader(head)) {
      db.zadd(queue, score, head);
      let told = false;
      for (const [waiting] of db.zrange(queue)) {
        if (!isReader(waiting)) break;
        if (db.publish(wakeChannelOf(waiting), turn(waiting)) > 0) told = true;
        else db.zrem(queue, waiting);
      }
      if (told) {
        db.set(key, READ_MARKER, turnMs);
        return true;
      }
    } else if (isMultiResource(head)) {
      db.set(key, TURN_MARK + head, turnMs);
      db.publish(wakeChannelOf(head), turn(head));
      return true;
    } else {
      const clockUs = db.timeUs();
      const { token } = nextToken(db, fence, settings);
      db.set(key, token === undefined ? TURN_MARK + head : head, turnMs);
      const message =
        token === undefined
          ? turn(head)
          : encodeWakeMessage({ kind: 'handed', value: head, cause, token, clockUs });
      if (db.publish(wakeChannelOf(head), message) > 0) return true;
      db.del(key);
    }
  }
  return false;
}

const acquire: Emulation = (db, keys, [value, settings, ttl, ticket, seed, expected]) => {
  const n = (keys.length - 1) / 3;
  if (!(n === 1 && db.set(keys[0], value, Number(ttl), true))) {
    let busy = -2;
    let holder: string | null = null;
    for (const key of keys.slice(0, n)) {
      const current = db.get(key);
      if (current === undefined || current === TURN_MARK + value || current === value) continue;
      const pttl = db.pttl(key);
      holder ??= current;
      busy = pttl === -1 || busy === -1 ? -1 : Math.max(busy, pttl);
    }
    if (busy !== -2) {
      enqueue(db, keys.slice(2 * n, 3 * n), ticket, value, settings);
      return [0, busy, holder, db.timeUs()];
    }
    for (let i = 0; i < n; i++) {
      db.set(keys[i], value, Number(ttl));
      if (ticket !== '') db.zrem(keys[2 * n + i], value);
    }
  }
  const clock = expected !== undefined;
  const out: number[] = [1];
  for (let i = 0; i < n; i++) {
    const { token, abstain } = nextToken(db, keys[n + i], settings, keys.at(-1), num(seed));
    if (abstain !== undefined) {
      for (const key of keys.slice(0, n)) if (db.get(key) === value) db.del(key);
      return [-1, abstain];
    }
    if (n === 1 && !clock) return token;
    if (n === 1) {
      const off = db.timeUs() - Number(expected);
      return expected !== '' && off >= -CLOCK_WINDOW_US && off <= CLOCK_WINDOW_US
        ? token
        : [token, db.timeUs()];
    }
    out.push(token!);
  }
  return clock ? [2, ...out.slice(1), db.timeUs()] : out;
};

const letGo: Emulation = (db, keys, [value, settings, op, ticket, renamedTo]) => {
  const renamed = renamedTo ?? value;
  const n = keys.length / 3;
  let count = 0;
  for (let i = 0; i < n; i++) {
    const [key, fence, queue] = [keys[i], keys[n + i], keys[2 * n + i]];
    const current = db.get(key);
    const queued = db.exists(queue);
    const had = queued && db.zrem(queue, value);
    const mine = current === value || (op !== 'requeue' && current === TURN_MARK + value);
    if (op === 'requeue' && (had || (mine && queued))) db.zadd(queue, Number(ticket), renamed);
    if (had && op === 'leave-queue') count++;
    if (!mine) continue;
    if (op !== 'leave-queue') count++;
    const hand = queued && (op !== 'requeue' || renamed !== value);
    if (!(hand && promote(db, key, fence, queue, value, settings))) db.del(key);
  }
  return count;
};

/** Whether every key of `keys` holds `value`; if so, their leases become `ttl`. */
function renew(db: MemoryServer, keys: readonly string[], value: string, ttl: string): number {
  if (keys.some((key) => db.get(key) !== value)) return 0;
  for (const key of keys) db.pexpire(key, Number(ttl));
  return 1;
}

const extend: Emulation = (db, keys, [value, ttl, clock]) => {
  const ok = renew(db, keys, value, ttl);
  return clock === undefined ? ok : ok ? db.timeUs() : -db.timeUs();
};

const extendMany: Emulation = (db, keys, args) => {
  const count = Number(args[0]);
  const out: number[] = [];
  let k = 0;
  let a = 1;
  for (let i = 0; i < count; i++, a += 3) {
    const size = Number(args[a]);
    out.push(renew(db, keys.slice(k, k + size), args[a + 1], args[a + 2]));
    k += size;
  }
  if (args[a] !== undefined) out.push(db.timeUs());
  return out;
};

const raiseFence: Emulation = (db, keys, [value, settings, ...tokens]) => {
  const n = keys.length / 2;
  if (keys.slice(0, n).some((key) => db.get(key) !== value)) return 0;
  const current = keys.slice(n).map((fence) => db.get(fence));
  if (current.some((c) => c === undefined)) return 0;
  current.forEach((c, i) => {
    if (Number(c) < Number(tokens[i])) db.set(keys[n + i], tokens[i], setting(settings, Setting.FenceIdleMs));
  });
  return 1;
};

const inspect: Emulation = (db, [key, fence]) => [
  db.get(key) ?? null,
  db.pttl(key),
  db.get(fence) ?? null,
  db.timeUs(),
];

const semaphore: Emulation = (db, keys, [value, settings, ttl, ticket, seed, permits]) => {
  const k = (keys.length - 4) / 2;
  const lockKey = keys[2 * k + 1];
  const used = db.get(lockKey);
  if (used === READ_MARKER) return [-3, 0];
  if (used !== undefined && used !== PERMITS_MARK + permits)
    return [-3, Number(/^~permits:(\d+)$/.exec(used)?.[1] ?? 1)];
  if (used === undefined && db.exists(keys[2 * k + 2])) return [-3, 1];
  db.set(lockKey, PERMITS_MARK + permits, setting(settings, Setting.FenceIdleMs));
  let slot: number | undefined;
  const free: number[] = [];
  let wait = -2;
  let holder: string | null = null;
  for (let i = 0; i < k; i++) {
    const current = db.get(keys[i]);
    if (current === value || current === TURN_MARK + value) slot ??= i;
    if (current === undefined || current === value || current === TURN_MARK + value) free.push(i);
    else {
      holder ??= current;
      const pttl = db.pttl(keys[i]);
      if (pttl >= 0 && (wait < 0 || pttl < wait)) wait = pttl;
    }
  }
  slot ??= free[0];
  const queue = keys[2 * k];
  if (slot === undefined) {
    enqueue(db, [queue], ticket, value, settings);
    return [0, wait === -2 ? -1 : wait, holder, db.timeUs()];
  }
  db.set(keys[slot], value, Number(ttl));
  if (ticket !== '') db.zrem(queue, value);
  const { token, abstain } = nextToken(db, keys[k + slot], settings, keys.at(-1), num(seed));
  if (abstain !== undefined) {
    db.del(keys[slot]);
    return [-1, abstain];
  }
  return clockReadings(settings) ? [2, slot, token, db.timeUs(), ...free] : [1, slot, token, ...free];
};

const LOCK_SCRIPTS: Array<[LuaScript, Emulation]> = [
  [ACQUIRE, acquire],
  [LET_GO, letGo],
  [EXTEND, extend],
  [EXTEND_MANY, extendMany],
  [RAISE_FENCE, raiseFence],
  [INSPECT, inspect],
  [SEMAPHORE_ACQUIRE_SCRIPT, semaphore],
];

/** Every script the voter and the guards run, by SHA. */
export const EMULATED_SCRIPTS: ReadonlyMap<string, Emulation> = new Map(
  [...LOCK_SCRIPTS, ...READ_SCRIPTS, ...GUARD_SCRIPTS].map(([script, run]) => [script.sha, run]),
);
