import { FENCE_SUFFIX, queueKeyOf, READ_MARKER } from '../../core/scripts/keys.js';
import { isReader, type AcquireVote, type LetGo } from '../../core/scripts/index.js';
import type { MemoryState } from './memory-state.js';

/*
 * A read-write lock's readers on the in-memory voter: scripts/read.ts, step for step. The lock key
 * holds READ_MARKER with the longest reader's lease while readers hold it; each reader's lease is
 * its own entry in the state's readers (value -> the voter's clock, ms, at which it ends).
 */

/** What the reader operations need of their voter: its state, and how it hands a key over. */
export interface ReaderHost {
  readonly state: MemoryState;
  /** Hands `key` to the first in its queue (promote); whether someone got it. */
  promote(key: string, cause: string): boolean;
  /** The token of a grant from a missing counter (seeded as the scripts seed it). */
  seedToken(fence: string, seedUs: number | undefined): number;
}

/** A reader's acquire (READ_ACQUIRE). */
export function readAcquire(
  host: ReaderHost,
  key: string,
  value: string,
  ttlMs: number,
  ticket: string,
  seedUs: number | undefined,
): AcquireVote {
  const s = host.state;
  const queue = queueKeyOf(key);
  let current = s.get(key);
  if (current === undefined && s.exists(queue)) {
    host.promote(key, value); // free, with a line: the hand-over nobody made
    current = s.get(key);
  }
  const queued = s.exists(queue);
  let busy: number | undefined;
  let holder = current;
  if (current !== undefined && current !== READ_MARKER) busy = s.pttl(key);
  else if (queued) {
    const mine = s.zscore(queue, value) ?? (ticket === '' ? undefined : Number(ticket));
    const writer = s.zmembers(queue).find((m) => !isReader(m.member));
    if (writer && (mine === undefined || writer.score < mine)) {
      busy = current === undefined ? -1 : s.pttl(key);
      holder = writer.member;
    }
  }
  if (busy !== undefined) {
    if (ticket !== '') s.zadd(queue, Number(ticket), value);
    return { kind: 'busy', retryAfterMs: busy, holder: holder!, clockUs: s.clockUs() };
  }
  const fence = key + FENCE_SUFFIX;
  const token = s.counter(fence) ?? host.seedToken(fence, seedUs);
  s.setReader(key, value, s.clock() + ttlMs);
  if (s.pttl(key) < ttlMs) s.set(key, READ_MARKER, ttlMs);
  if (queued) s.zrem(queue, value);
  return { kind: 'granted', tokens: [token] };
}

/** A reader's extension (READ_EXTEND). */
export function readExtend(host: ReaderHost, key: string, value: string, ttlMs: number): boolean {
  const s = host.state;
  const now = s.clock();
  const ends = s.readerEnds(key, value);
  if (s.get(key) !== READ_MARKER || ends === undefined || ends <= now) return false;
  s.setReader(key, value, now + ttlMs);
  s.pexpire(key, s.liveReadersUntil(key) - now);
  return true;
}

/** A reader lets go (READ_LET_GO). */
export function readLetGo(host: ReaderHost, key: string, value: string, how: LetGo): void {
  const s = host.state;
  const queue = queueKeyOf(key);
  const queued = s.exists(queue);
  const mine = s.deleteReader(key, value);
  if (queued) {
    const had = s.zrem(queue, value);
    if (how.op === 'requeue' && (had || mine)) s.zadd(queue, Number(how.ticket), how.renamedTo ?? value);
  }
  if (!mine || s.get(key) !== READ_MARKER) return;
  const latest = s.liveReadersUntil(key);
  if (latest > 0) s.pexpire(key, latest - s.clock());
  else if (!(queued && host.promote(key, value))) s.del(key);
}

/** A reader's fence raise (READ_RAISE_FENCE). */
export function readRaiseFence(host: ReaderHost, key: string, value: string, token: number): boolean {
  const s = host.state;
  if (s.get(key) !== READ_MARKER || s.readerEnds(key, value) === undefined) return false;
  const fence = key + FENCE_SUFFIX;
  const current = s.counter(fence);
  if (current === undefined) return false; // gone since the grant: not created (scripts/read.ts)
  if (current < token) s.setCounter(fence, token);
  return true;
}

/** The live readers of `key` (READ_INSPECT). */
export function readInspect(host: ReaderHost, key: string): string[] {
  const s = host.state;
  if (s.get(key) !== READ_MARKER) return [];
  s.liveReadersUntil(key);
  return s.readerValues(key);
}
