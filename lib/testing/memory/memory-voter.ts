import { FENCE_SUFFIX, PERMITS_MARK, queueKeyOf } from '../../core/scripts/keys.js';
import { READ_MARKER } from '../../core/scripts/keys.js';
import {
  encodeWakeMessage,
  isMultiResource,
  isReader,
  TURN_MARK,
  wakeChannelOf,
  type AcquireVote,
  type ExtendAnswers,
  type ExtendRequest,
  type KeyView,
  type LetGo,
  type SlotVote,
} from '../../core/scripts/index.js';
import { MemoryState } from './memory-state.js';
import {
  readAcquire,
  readExtend,
  readInspect,
  readLetGo,
  readRaiseFence,
  type ReaderHost,
} from './memory-readers.js';
import type { Voter, VoterContext, VoterFactory } from '../../core/voter/voter-api.js';

/**
 * A voter that keeps the lock state in this process: the same operations as the Lua scripts in
 * scripts/, step for step, on a {@link MemoryState}. For unit tests of code that uses locks (no
 * Redis, no sockets, no timers): locks are exclusive within the process, waiters queue and are
 * handed the lock, tokens strictly increase. It never loses its data, so it never abstains.
 */
export class MemoryVoter implements Voter, ReaderHost {
  readonly connected = true;
  readonly connectionError = undefined;
  private readonly unsubscribes: Array<() => void> = [];
  private readonly turnMs: number;
  private readonly fenceIdleMs: number;
  /** How far above its clock a first token may be seeded with the caller's proposal, µs (fence.ts). */
  private readonly seedWindowUs: number;
  /** Whether grants and extensions carry the clock (the engine runs the clock guard). */
  private readonly clockReadings: boolean;

  constructor(
    readonly label: string,
    /** The keyspace; tests may reach it to change the state behind the engine's back. */
    readonly state: MemoryState,
    context: VoterContext,
  ) {
    this.turnMs = context.settings.turnMs;
    this.fenceIdleMs = context.settings.fenceIdleMs;
    this.seedWindowUs = Math.max(0, Math.floor(context.settings.seedWindowMs)) * 1000;
    this.clockReadings = context.settings.clockReadings === true;
  }

  /** A factory for `nodes`: one voter per engine, all sharing `state` (one "server"). */
  static factory(
    label = 'memory://0',
    state = new MemoryState(),
  ): VoterFactory & { readonly state: MemoryState } {
    return { state, createVoter: (context) => new MemoryVoter(label, state, context) };
  }

  waitReady(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
  ): Promise<AcquireVote> {
    if (isReader(value)) return readAcquire(this, keys[0]!, value, ttlMs, ticket, seedUs);
    const s = this.state;
    const granted = keys.length === 1 && s.set(keys[0]!, value, ttlMs, true);
    if (!granted) {
      let busy = -2;
      let holder: string | undefined;
      for (const key of keys) {
        const current = s.get(key);
        if (current !== undefined && current !== TURN_MARK + value && current !== value) {
          const pttl = s.pttl(key);
          holder ??= current;
          busy = pttl === -1 || busy === -1 ? -1 : Math.max(busy, pttl);
        }
      }
      if (holder !== undefined) {
        if (ticket !== '') for (const key of keys) s.zadd(queueKeyOf(key), Number(ticket), value);
        return { kind: 'busy', retryAfterMs: busy, holder, clockUs: s.clockUs() };
      }
      // Every key is free, our turn, or already handed to us.
      for (const key of keys) {
        s.set(key, value, ttlMs);
        if (ticket !== '') s.zrem(queueKeyOf(key), value);
      }
    }
    const tokens = keys.map((key) => this.grantToken(key + FENCE_SUFFIX, seedUs));
    return this.clockReadings
      ? { kind: 'granted', tokens, clockUs: s.clockUs() }
      : { kind: 'granted', tokens };
  }

  /** A semaphore's slot search (scripts/semaphore.ts, step for step). */
  async acquireSlot(
    slotKeys: readonly string[],
    lockKey: string,
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs: number | undefined,
    permits: number,
  ): Promise<SlotVote> {
    const s = this.state;
    const marker = PERMITS_MARK + permits;
    const used = s.get(lockKey);
    if (used === READ_MARKER) return { kind: 'conflict', permits: 0 };
    if (used !== undefined && used !== marker) {
      const other = /^~permits:(\d+)$/.exec(used);
      return { kind: 'conflict', permits: other ? Number(other[1]) : 1 };
    }
    if (used === undefined && s.counter(lockKey + FENCE_SUFFIX) !== undefined)
      return { kind: 'conflict', permits: 1 };
    s.set(lockKey, marker, this.fenceIdleMs);
    let slot: number | undefined;
    const free: number[] = [];
    let wait = -2;
    let holder: string | undefined;
    for (let i = 0; i < slotKeys.length; i++) {
      const current = s.get(slotKeys[i]!);
      if (current === value || current === TURN_MARK + value) {
        slot ??= i;
        free.push(i);
      } else if (current === undefined) free.push(i);
      else {
        holder ??= current;
        const pttl = s.pttl(slotKeys[i]!);
        if (pttl >= 0 && (wait < 0 || pttl < wait)) wait = pttl;
      }
    }
    slot ??= free[0];
    const queue = queueKeyOf(slotKeys[0]!);
    if (slot === undefined) {
      if (ticket !== '') s.zadd(queue, Number(ticket), value);
      return { kind: 'busy', retryAfterMs: wait === -2 ? -1 : wait, holder: holder!, clockUs: s.clockUs() };
    }
    s.set(slotKeys[slot]!, value, ttlMs);
    if (ticket !== '') s.zrem(queue, value);
    const token = this.grantToken(slotKeys[slot]! + FENCE_SUFFIX, seedUs);
    if (this.clockReadings) return { kind: 'granted', index: slot, token, free, clockUs: s.clockUs() };
    return { kind: 'granted', index: slot, token, free };
  }

  /**
   * The token of a grant (scripts/fence.ts, nextTokenLua): a missing counter is seeded from the
   * clock, or from the caller's proposal when that lies above the clock, at most the seed window
   * above it, so that voters whose clocks agree seed the same token.
   */
  private grantToken(fence: string, seedUs: number | undefined): number {
    if (seedUs === undefined || this.state.counter(fence) !== undefined) return this.state.nextToken(fence);
    return this.seedToken(fence, seedUs);
  }

  /** ReaderHost: a missing counter's first token (see grantToken). */
  seedToken(fence: string, seedUs: number | undefined): number {
    const s = this.state;
    if (seedUs === undefined) return s.nextToken(fence);
    const clock = s.clockUs();
    const proposal = Math.round(seedUs);
    const token = proposal > clock ? Math.min(proposal, clock + this.seedWindowUs) : clock;
    s.setCounter(fence, token);
    return token;
  }

  async raiseFence(keys: readonly string[], value: string, tokens: readonly number[]): Promise<boolean> {
    if (isReader(value)) return readRaiseFence(this, keys[0]!, value, tokens[0]!);
    if (keys.some((key) => this.state.get(key) !== value)) return false;
    // A counter gone since the grant is not created (scripts/fence.ts, RAISE_FENCE).
    if (keys.some((key) => this.state.counter(key + FENCE_SUFFIX) === undefined)) return false;
    keys.forEach((key, i) => {
      const fence = key + FENCE_SUFFIX;
      if (this.state.counter(fence)! < tokens[i]!) this.state.setCounter(fence, tokens[i]!);
    });
    return true;
  }

  async extend(batch: readonly ExtendRequest[]): Promise<ExtendAnswers> {
    const answers: ExtendAnswers = batch.map(({ keys, value, ttlMs }) => {
      if (isReader(value)) return readExtend(this, keys[0]!, value, ttlMs);
      if (keys.some((key) => this.state.get(key) !== value)) return false;
      for (const key of keys) this.state.pexpire(key, ttlMs);
      return true;
    });
    if (this.clockReadings) answers.clockUs = this.state.clockUs();
    return answers;
  }

  async letGo(keys: readonly string[], value: string, how: LetGo): Promise<void> {
    if (isReader(value)) return readLetGo(this, keys[0]!, value, how);
    const s = this.state;
    for (const key of keys) {
      const queue = queueKeyOf(key);
      const current = s.get(key);
      const queued = s.exists(queue);
      if (how.op === 'requeue') {
        const renamed = how.renamedTo ?? value;
        const mine = current === value;
        const had = queued && s.zrem(queue, value);
        if (had || (mine && queued)) s.zadd(queue, Number(how.ticket), renamed);
        if (mine && !(renamed !== value && queued && this.promote(key, value))) s.del(key);
        continue;
      }
      const mine = current === value || current === TURN_MARK + value;
      if (queued) s.zrem(queue, value);
      if (mine && !(queued && this.promote(key, value))) s.del(key);
    }
  }

  async inspect(lockKey: string): Promise<KeyView> {
    const holder = this.state.get(lockKey) ?? null;
    const pttl = this.state.pttl(lockKey);
    return {
      holder,
      ttlMs: holder !== null && pttl >= 0 ? pttl : null,
      fence: this.state.counter(lockKey + FENCE_SUFFIX) ?? null,
    };
  }

  async inspectReaders(lockKey: string): Promise<string[]> {
    return readInspect(this, lockKey);
  }

  async ping(): Promise<void> {}

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    this.unsubscribes.push(this.state.subscribe(channel, onMessage));
  }

  onHealthChange(): void {
    // Always up.
  }

  failureReason(err: unknown): string {
    return err instanceof Error ? err.message : String(err);
  }

  async close(): Promise<void> {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  /**
   * ReaderHost: hands `key` to the first in its queue whose engine listens (scripts/queue.ts,
   * promote); readers at the head go in together, each given a turn to claim.
   */
  promote(key: string, cause: string): boolean {
    const s = this.state;
    const queue = queueKeyOf(key);
    for (;;) {
      const first = s.zmembers(queue)[0];
      if (first && isReader(first.member)) {
        let told = false;
        for (const { member } of [...s.zmembers(queue)]) {
          if (!isReader(member)) break;
          const turn = encodeWakeMessage({ kind: 'turn', value: member, cause });
          if (s.publish(wakeChannelOf(member), turn) > 0) told = true;
          else s.zrem(queue, member);
        }
        if (told) {
          s.set(key, READ_MARKER, this.turnMs);
          return true;
        }
        continue;
      }
      const head = s.zpopmin(queue);
      if (head === undefined) return false;
      const channel = wakeChannelOf(head);
      if (isMultiResource(head)) {
        s.set(key, TURN_MARK + head, this.turnMs);
        s.publish(channel, encodeWakeMessage({ kind: 'turn', value: head, cause }));
        return true;
      }
      if (s.counter(key + FENCE_SUFFIX) === undefined) {
        // No counter (a reset state): a turn to claim, as scripts/queue.ts gives (its node may
        // be under its restart guard, which only an acquire reads).
        s.set(key, TURN_MARK + head, this.turnMs);
        if (s.publish(channel, encodeWakeMessage({ kind: 'turn', value: head, cause }))) return true;
        s.del(key);
        continue;
      }
      const clockUs = s.clockUs();
      s.set(key, head, this.turnMs);
      const token = s.nextToken(key + FENCE_SUFFIX);
      if (s.publish(channel, encodeWakeMessage({ kind: 'handed', value: head, cause, token, clockUs })))
        return true;
      s.del(key);
    }
  }
}
