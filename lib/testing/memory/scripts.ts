import { PERMITS_MARK, READ_MARKER } from '../../core/scripts/keys.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from '../../core/scripts/semaphore.js';
import { SETTING_FIELDS, type ScriptSetting } from '../../core/scripts/settings.js';
import * as lua from '../../core/scripts/index.js';
import { isMultiResource, isReader, TURN_MARK, wakeChannelOf } from '../../core/scripts/index.js';
import { FENCED_SCRIPTS } from './scripts-fenced.js';
import { GUARD_SCRIPTS } from './scripts-guards.js';
import { READ_SCRIPTS } from './scripts-read.js';
import type { MemoryServer as Db } from './server.js';

/*
 * The lock's Lua scripts (lib/core/scripts/) in TypeScript, step for step, on a MemoryServer: the
 * same keys, arguments and replies (as ioredis decodes them on RESP2: a Lua false is null). Each
 * reads like its Lua; the differential test (test/integration/memory/) holds the two together.
 */

/** An emulated script: the server, KEYS and ARGV (0-based here), the reply. */
export type Emulation = (db: Db, keys: readonly string[], args: readonly string[]) => unknown;

/** The settings arguments seen, parsed (an engine sends one and the same with every script). */
const parsed = new Map<string, number[]>();

/** A field of the settings argument `settings`. */
export function setting(settings: string, field: ScriptSetting): number {
  let fields = parsed.get(settings);
  if (!fields) parsed.set(settings, (fields = settings.split(' ').map(Number)));
  return fields[SETTING_FIELDS.indexOf(field)];
}
/** Whether the settings ask for clock readings (their last character is 1). */
export const clockReadings = (settings: string): boolean => settings.endsWith('1');
/** Lua's tonumber of an argument: undefined for '' (or none). */
export const num = (text: string | undefined): number | undefined => (text ? Number(text) : undefined);

/**
 * nextTokenLua (scripts/fence.ts): the next token of `fence`, seeding a missing counter from the
 * clock (or the proposed `seed` within the seed window) once the restart-guard `marker` has passed,
 * abstaining when the clock is behind the proposal by more than half the guard; a hand-over (no
 * marker) seeds nothing.
 */
export function nextToken(db: Db, fence: string, settings: string, marker?: string, seed?: number): Token {
  let token = db.incr(fence);
  if (token !== 1) {
    if (token % 64 === 0) db.pexpire(fence, setting(settings, 'fenceIdleMs'));
    return { token };
  }
  const abstain = marker === undefined ? undefined : restartGuard(db, marker, setting(settings, 'guardMs'));
  if (abstain !== undefined || marker === undefined) {
    db.del(fence);
    return { abstain };
  }
  token = db.timeUs();
  if (seed !== undefined && seed > token) {
    // A clock behind the proposal (the voters' time) by more than half the guard: abstain.
    const behindMs = (seed - token) / 1000;
    const halfGuard = setting(settings, 'guardMs') / 2;
    if (halfGuard > 0 && behindMs > halfGuard) {
      db.del(fence);
      return { abstain: Math.ceil(behindMs - halfGuard), behind: Math.floor(behindMs) };
    }
    token = Math.min(seed, token + setting(settings, 'seedWindowMs') * 1000);
  }
  db.set(fence, token.toFixed(0), setting(settings, 'fenceIdleMs'));
  return { token };
}

type Token = { token?: number; abstain?: number; behind?: number };

/** A script's reply when the node abstains: {-1, ms}, or {-1, ms, ms behind} for its clock. */
export const abstention = ({ abstain, behind }: Token): unknown[] =>
  behind === undefined ? [-1, abstain] : [-1, abstain, behind];

/**
 * The restart guard where a counter is missing: the ms to abstain; undefined once the marker has
 * passed (it is then '0'; with the guard off it is set so).
 */
function restartGuard(db: Db, marker: string, guardMs: number): number | undefined {
  const ready = db.get(marker);
  const now = db.nowMs();
  const until = ready === undefined ? now + guardMs : Number(ready);
  if (ready === '0') return undefined;
  if (guardMs > 0 && ready === undefined) db.set(marker, until.toFixed(0));
  if (guardMs > 0 && now < until) return until - now;
  db.set(marker, '0');
  return undefined;
}

/** Queues `value` in each of `queues` by `ticket` (renewing their idle expiry), as a busy acquire does. */
export function enqueue(db: Db, queues: string[], ticket: string, value: string, settings: string): void {
  const idle = setting(settings, 'queueIdleMs');
  for (const queue of ticket === '' ? [] : queues) {
    db.zadd(queue, Number(ticket), value);
    if (db.pttl(queue) < idle) db.pexpire(queue, idle);
  }
}

/** PROMOTE_LUA (scripts/queue.ts): hands `key` to the first in `queue` who listens; whether someone got it. */
export function promote(db: Db, [key, fence, queue]: string[], cause: string, settings: string): boolean {
  const turnMs = setting(settings, 'turnMs');
  const tell = (value: string, message = lua.encodeWakeMessage({ kind: 'turn', value, cause })) =>
    db.publish(wakeChannelOf(value), message) > 0;
  for (let popped = db.zpopmin(queue); popped; popped = db.zpopmin(queue)) {
    const [head, score] = popped;
    if (isReader(head)) {
      db.zadd(queue, score, head);
      let told = false;
      for (const [waiting] of db.zrange(queue)) {
        if (!isReader(waiting)) break;
        if (tell(waiting)) told = true;
        else db.zrem(queue, waiting);
      }
      if (told) {
        db.set(key, READ_MARKER, turnMs);
        return true;
      }
    } else if (isMultiResource(head)) {
      db.set(key, TURN_MARK + head, turnMs);
      if (tell(head)) return true;
      db.del(key);
    } else {
      const clockUs = db.timeUs();
      const { token } = nextToken(db, fence, settings);
      db.set(key, token === undefined ? TURN_MARK + head : head, turnMs);
      const handed =
        token === undefined
          ? undefined
          : lua.encodeWakeMessage({ kind: 'handed', value: head, cause, token, clockUs });
      if (tell(head, handed)) return true;
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
    for (let i = 0; i < n; i++) db.set(keys[i], value, Number(ttl));
    if (ticket !== '') keys.slice(2 * n, 3 * n).forEach((queue) => db.zrem(queue, value));
  }
  const tokens: number[] = [];
  for (let i = 0; i < n; i++) {
    const next = nextToken(db, keys[n + i], settings, keys.at(-1), num(seed));
    if (next.abstain === undefined) tokens.push(next.token!);
    else {
      for (const key of keys.slice(0, n)) if (db.get(key) === value) db.del(key);
      return abstention(next);
    }
  }
  if (expected === undefined) return n === 1 ? tokens[0] : [1, ...tokens];
  const off = db.timeUs() - Number(expected);
  if (n > 1) return [2, ...tokens, db.timeUs()];
  return expected !== '' && Math.abs(off) <= lua.CLOCK_WINDOW_US ? tokens[0] : [tokens[0], db.timeUs()];
};

const letGo: Emulation = (db, keys, [value, settings, op, ticket, renamed = value, passOnArg]) => {
  const passOn = passOnArg === '1' && renamed !== value;
  const n = keys.length / 3;
  let count = 0;
  for (let i = 0; i < n; i++) {
    const [key, fence, queue] = [keys[i], keys[n + i], keys[2 * n + i]];
    const current = db.get(key);
    const queued = db.exists(queue);
    const had = queued && db.zrem(queue, value);
    const mine = current === value || (op !== 'requeue' && current === TURN_MARK + value);
    if (op === 'requeue' && (had || (mine && (queued || passOn)))) db.zadd(queue, Number(ticket), renamed);
    if ((had && op === 'leave-queue') || (mine && op !== 'leave-queue')) count++;
    const hand = (queued || passOn) && (op !== 'requeue' || renamed !== value);
    if (mine && !(hand && promote(db, [key, fence, queue], value, settings))) db.del(key);
  }
  return count;
};

const releaseMany: Emulation = (db, keys, [count, settings, ...values]) => {
  let released = 0;
  for (let j = 0; j < Number(count); j++)
    released += Number(letGo(db, keys.slice(3 * j, 3 * j + 3), [values[j]!, settings!, 'release']));
  return released;
};

/** Whether every key of `keys` holds `value`: 1, and their leases become `ttl`; else 0. */
function renew(db: Db, keys: readonly string[], value: string, ttl: string): number {
  if (keys.some((key) => db.get(key) !== value)) return 0;
  keys.forEach((key) => db.pexpire(key, Number(ttl)));
  return 1;
}

const extend: Emulation = (db, keys, [value, ttl, clock]) => {
  const ok = renew(db, keys, value, ttl);
  return clock === undefined ? ok : ok ? db.timeUs() : -db.timeUs();
};

const extendMany: Emulation = (db, keys, args) => {
  const out: number[] = [];
  let [k, a] = [0, 1];
  for (let i = 0; i < Number(args[0]); i++) {
    const size = Number(args[a]);
    out.push(renew(db, keys.slice(k, k + size), args[a + 1], args[a + 2]));
    [k, a] = [k + size, a + 3];
  }
  return args[a] === undefined ? out : [...out, db.timeUs()];
};

const raiseFence: Emulation = (db, keys, [value, settings, ...tokens]) => {
  const n = keys.length / 2;
  const counters = keys.slice(n).map((fence) => db.get(fence));
  if (keys.slice(0, n).some((key) => db.get(key) !== value) || counters.includes(undefined)) return 0;
  counters.forEach((counter, i) => {
    if (Number(counter) < Number(tokens[i])) db.set(keys[n + i], tokens[i], setting(settings, 'fenceIdleMs'));
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
  const used = db.get(keys[2 * k + 1]);
  if (used === READ_MARKER) return [-3, 0];
  if (used !== undefined && used !== PERMITS_MARK + permits)
    return [-3, Number(/^~permits:(\d+)$/.exec(used)?.[1] ?? 1)];
  if (used === undefined && db.exists(keys[2 * k + 2])) return [-3, 1];
  db.set(keys[2 * k + 1], PERMITS_MARK + permits, setting(settings, 'fenceIdleMs'));
  const free: number[] = [];
  let slot: number | undefined;
  let wait = -2;
  const holders: string[] = [];
  for (let i = 0; i < k; i++) {
    const current = db.get(keys[i]);
    if (current === value || current === TURN_MARK + value) slot ??= i;
    if (current === undefined || current === value || current === TURN_MARK + value) free.push(i);
    else {
      holders.push(current);
      const pttl = db.pttl(keys[i]);
      if (pttl >= 0 && (wait < 0 || pttl < wait)) wait = pttl;
    }
  }
  slot ??= free[0];
  if (slot === undefined) {
    enqueue(db, [keys[2 * k]], ticket, value, settings);
    return [0, wait === -2 ? -1 : wait, holders[0], db.timeUs(), ...holders];
  }
  db.set(keys[slot], value, Number(ttl));
  if (ticket !== '') db.zrem(keys[2 * k], value);
  const next = nextToken(db, keys[k + slot], settings, keys.at(-1), num(seed));
  if (next.abstain !== undefined) {
    db.del(keys[slot]);
    return abstention(next);
  }
  const { token } = next;
  return clockReadings(settings) ? [2, slot, token, db.timeUs(), ...free] : [1, slot, token, ...free];
};

const LOCK_SCRIPTS: Array<[lua.LuaScript, Emulation]> = [
  [lua.ACQUIRE, acquire],
  [lua.LET_GO, letGo],
  [lua.RELEASE_MANY, releaseMany],
  [lua.EXTEND, extend],
  [lua.EXTEND_MANY, extendMany],
  [lua.RAISE_FENCE, raiseFence],
  [lua.INSPECT, inspect],
  [SEMAPHORE_ACQUIRE_SCRIPT, semaphore],
];

/** Every script the voter, the guards and FencedWriter run, by SHA. */
export const EMULATED_SCRIPTS: ReadonlyMap<string, Emulation> = new Map(
  [...LOCK_SCRIPTS, ...READ_SCRIPTS, ...GUARD_SCRIPTS, ...FENCED_SCRIPTS].map(([script, run]) => [
    script.sha,
    run,
  ]),
);
