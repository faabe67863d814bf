import {
  CLOCK_MARK,
  clockMarkArgs,
  decodeAcquireReply,
  decodeClockMarkReply,
  decodeExtendManyReply,
  decodeExtendOneReply,
  decodeInspectReply,
  decodeRaiseFenceReply,
  decodeSlotReply,
  extendArgs,
  extendManyCall,
  fencedKeys,
  isReader,
  inspectKeys,
  CLUSTER_SCRIPTS,
  letGoScript,
  SCRIPTS,
  type AcquireVote,
  type ClockMark,
  type EngineScripts,
  type ExtendAnswers,
  type ExtendRequest,
  type KeyView,
  type LetGo,
  type ScriptCalls,
  type SlotVote,
} from '../scripts/index.js';
import { FENCE_SUFFIX, queueKeyOf } from '../keys.js';
import { describeError } from './describe-error.js';
import { extendBySlot, inOneSlot } from './extend-by-slot.js';
import {
  readAcquire,
  readExtend,
  readInspect,
  readKeys,
  readLetGo,
  readLetGoArgs,
  readRaiseFence,
} from './read-calls.js';
import type { ScriptClient } from './script-client.js';
import type { Voter, VoterContext } from './voter.js';

/** A reply decoder that keeps the reply as it came (letting go: nobody reads the count). */
const asItCame = (reply: unknown): unknown => reply;

/**
 * A voter that runs the Lua scripts (scripts/) on a Redis server or cluster, through a
 * {@link ScriptClient}: the lock operations' keys, arguments and reply decoding, written once for
 * every client. The voters of each client (ioredis/, ioredis-cluster/) extend it with their adapter.
 *
 * The operations are plain promise chains, not async functions: they run on the hot path of every
 * lock, once per voter, and a suspended async frame per call costs garbage collection.
 */
export class ScriptVoter<C extends ScriptClient = ScriptClient> implements Voter {
  /** The engine's script keys and arguments, shared by its voters (scripts/calls.ts). */
  private readonly calls: ScriptCalls;
  /**
   * The scripts for this voter's key layout (scripts/key-layout.ts): a client that routes by slot
   * declares every key, one server lets the scripts derive the fence counters' and queues' names.
   */
  private readonly scripts: EngineScripts;
  /** Whether the lock scripts' keys are all declared (see {@link scripts}). */
  private readonly declared: boolean;
  /**
   * This voter's acquires in flight, by lock value, on a client that may reorder commands (see
   * ScriptClient.reorders and letGo); undefined on the others.
   */
  private readonly acquiring: Map<string, Promise<unknown>> | undefined;
  /** Whether extensions ask for the node's clock (the engine runs the clock guard). */
  private readonly clockReadings: boolean;

  constructor(
    /** The client adapter. */
    protected readonly adapter: C,
    context: VoterContext,
  ) {
    this.calls = context.calls;
    this.declared = adapter.declaresEveryKey === true;
    this.scripts = this.declared ? CLUSTER_SCRIPTS : SCRIPTS;
    this.clockReadings = context.settings.clockReadings === true;
    this.acquiring = adapter.reorders ? new Map() : undefined;
    adapter.attach?.(this);
  }

  get label(): string {
    return this.adapter.label;
  }

  /** Whether its client routes by slot (a Redis Cluster): a lock's keys must then share one slot. */
  get routesBySlot(): boolean {
    return this.adapter.keySlot !== undefined;
  }

  get connected(): boolean {
    return this.adapter.connected;
  }

  get connectionError(): string | undefined {
    return this.adapter.connectionError;
  }

  waitReady(timeoutMs: number): Promise<boolean> {
    return this.adapter.waitReady(timeoutMs);
  }

  acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): Promise<AcquireVote> {
    // A server still being checked may yet be told to abstain: vote once the check is done.
    const checking = this.adapter.checking;
    if (checking) return checking.then(() => this.vote(keys, value, ttlMs, ticket, seedUs, expectedClockUs));
    return this.vote(keys, value, ttlMs, ticket, seedUs, expectedClockUs);
  }

  acquireSlot(
    slotKeys: readonly string[],
    lockKey: string,
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs: number | undefined,
    permits: number,
  ): Promise<SlotVote> {
    const checking = this.adapter.checking;
    const send = (): Promise<SlotVote> => {
      // Every grant path consults the identity guard (the adapter's own abstention)...
      const abstainMs = this.adapter.abstainingForMs?.(slotKeys) ?? 0;
      if (abstainMs > 0) return Promise.resolve({ kind: 'abstaining', forMs: abstainMs });
      // ... and the restart guard (the marker, read in the script where a slot's counter is missing).
      let keys: string[];
      try {
        keys = [
          ...slotKeys,
          ...slotKeys.map((key) => key + FENCE_SUFFIX),
          queueKeyOf(slotKeys[0]!),
          lockKey,
          lockKey + FENCE_SUFFIX,
          this.adapter.markerKey(slotKeys),
        ];
      } catch (err) {
        return Promise.reject(err as Error);
      }
      const args = [
        value,
        this.calls.settings,
        String(Math.ceil(ttlMs)),
        ticket,
        seedUs?.toFixed(0) ?? '',
        String(permits),
      ];
      const sent = this.adapter.run(SCRIPTS.acquireSlot, keys, args, decodeSlotReply);
      if (this.acquiring) this.track(value, sent);
      return sent;
    };
    return checking ? checking.then(send) : send();
  }

  raiseFence(keys: readonly string[], value: string, tokens: readonly number[]): Promise<boolean> {
    if (isReader(value)) return readRaiseFence(this.adapter, this.calls, keys[0]!, value, tokens[0]!);
    const args = this.calls.raiseFenceArgs(value, tokens);
    return this.adapter.run(SCRIPTS.raiseFence, fencedKeys(keys), args, decodeRaiseFenceReply);
  }

  extend(batch: readonly ExtendRequest[]): Promise<ExtendAnswers> {
    const clock = this.clockReadings;
    if (batch.length === 1) {
      const only = batch[0]!;
      if (isReader(only.value)) return readExtend(this.adapter, only, clock);
      return this.adapter.run(SCRIPTS.extend, only.keys, extendArgs(only, clock), decodeExtendOneReply);
    }
    if (batch.some((request) => isReader(request.value))) return this.extendWithReaders(batch);
    const keySlot = this.adapter.keySlot?.bind(this.adapter);
    if (keySlot && !inOneSlot(batch, keySlot)) return extendBySlot(this.adapter, batch, keySlot);
    const { keys, args } = extendManyCall(batch, clock);
    return this.adapter.run(SCRIPTS.extendMany, keys, args, (reply) =>
      decodeExtendManyReply(reply, batch.length),
    );
  }

  letGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown> {
    const send = isReader(value)
      ? () => readLetGo(this.adapter, this.calls, keys[0]!, value, how)
      : () =>
          this.adapter.run(
            letGoScript(how, this.scripts),
            this.letGoKeys(keys),
            this.calls.letGoArgs(value, how),
            asItCame,
          );
    // The engine frees a late grant by sending this after the acquire, trusting one connection to
    // keep the order. A client that reorders does not always: a command that meets MOVED, or a
    // slot map being refreshed, is sent again later, after what followed it (seen on a Cluster:
    // the acquire of a fresh client landing 80 ms after its own release, a key left held for its
    // whole lease). So there a let-go waits for this voter's acquire of the same value first.
    const acquiring = this.acquiring?.get(value);
    return acquiring ? acquiring.then(send, send) : send();
  }

  /**
   * Lets go one-way where the client can (ScriptClient.runOneWay): written now, in the
   * connection's order, and no reply comes back. False when it was not sent: use {@link letGo}.
   */
  letGoOneWay(keys: readonly string[], value: string, how: LetGo): boolean {
    if (!this.adapter.runOneWay || !this.adapter.connected) return false;
    const calls = this.calls;
    if (isReader(value)) {
      const args = readLetGoArgs(calls, value, how);
      return this.adapter.runOneWay(SCRIPTS.readLetGo, readKeys(keys[0]!), args, calls.oneWay);
    }
    const args = calls.letGoArgs(value, how);
    return this.adapter.runOneWay(letGoScript(how, this.scripts), this.letGoKeys(keys), args, calls.oneWay);
  }

  /** A let-go script's keys: the lock keys, and on a Cluster their counters and queues too. */
  private letGoKeys(lockKeys: readonly string[]): readonly string[] {
    return this.declared ? this.calls.keys(lockKeys) : lockKeys;
  }

  /**
   * Puts this node under the restart guard for every client for `forMs` (scripts/clock-mark.ts);
   * a Redis Cluster marks the masters whose clocks are past `steppedPastMs` (its adapter's own).
   */
  markClockStep(forMs: number, steppedPastMs?: number): Promise<ClockMark> | undefined {
    if (this.adapter.markClockStep) return this.adapter.markClockStep(forMs, steppedPastMs);
    if (this.adapter.keySlot) return undefined;
    const marker = this.adapter.markerKey([]);
    return this.adapter.run(CLOCK_MARK, [marker], clockMarkArgs(forMs, marker), decodeClockMarkReply);
  }

  inspect(lockKey: string): Promise<KeyView> {
    return this.adapter.run(SCRIPTS.inspect, inspectKeys(lockKey), [], decodeInspectReply);
  }

  inspectReaders(lockKey: string): Promise<string[]> {
    return readInspect(this.adapter, lockKey);
  }

  ping(): Promise<void> {
    return this.adapter.ping();
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.adapter.subscribe(channel, onMessage);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.adapter.onHealthChange(listener);
  }

  onAbstention(listener: (forMs: number, why: string) => void): void {
    this.adapter.onAbstention?.(listener);
  }

  /**
   * Why a command to this node failed, log-safe. While the connection is down, clients only say
   * so ("Stream isn't writeable"); the connection's own last error (e.g. an authentication
   * failure, a refused connection or an untrusted certificate) is what the user needs to see.
   */
  failureReason(err: unknown): string {
    const message = describeError(err);
    const { lastError } = this.adapter;
    if (!this.adapter.connected && lastError !== undefined && lastError !== message) {
      return `not connected: ${lastError}`;
    }
    return message;
  }

  close(timeoutMs: number): Promise<void> {
    return this.adapter.close(timeoutMs);
  }

  /** The acquire vote once the server is checked: the node's own abstention, or the script's. */
  private vote(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs: number | undefined,
    expectedClockUs: number | undefined,
  ): Promise<AcquireVote> {
    const abstainMs = this.adapter.abstainingForMs?.(keys) ?? 0;
    if (abstainMs > 0) return Promise.resolve({ kind: 'abstaining', forMs: abstainMs });
    if (isReader(value)) {
      const read = readAcquire(this.adapter, this.calls, keys[0]!, value, ttlMs, ticket, seedUs);
      if (this.acquiring) this.track(value, read);
      return read;
    }
    let withMarker: readonly string[];
    try {
      const marker = this.adapter.markerKey(keys);
      withMarker = this.declared
        ? this.calls.acquireKeys(this.calls.keys(keys), marker)
        : this.calls.serverAcquireKeys(keys, marker);
    } catch (err) {
      return Promise.reject(err as Error);
    }
    const args = this.calls.acquireArgs(value, ttlMs, ticket, seedUs, expectedClockUs);
    const sent = this.adapter.run(this.scripts.acquire, withMarker, args, decodeAcquireReply);
    if (this.acquiring) this.track(value, sent);
    return sent;
  }

  /** Keeps `sent` as the acquire of `value` in flight until it settles (see letGo). */
  private track(value: string, sent: Promise<unknown>): void {
    const acquiring = this.acquiring!;
    acquiring.set(value, sent);
    const settled = () => {
      if (acquiring.get(value) === sent) acquiring.delete(value);
    };
    sent.then(settled, settled);
  }

  /** A batch with readers: each reader's extension on its own, the writers' as one batch. */
  private extendWithReaders(batch: readonly ExtendRequest[]): Promise<ExtendAnswers> {
    const writers = batch.filter((request) => !isReader(request.value));
    const written: Promise<ExtendAnswers> = writers.length > 0 ? this.extend(writers) : Promise.resolve([]);
    const read = batch.map((request) =>
      isReader(request.value) ? readExtend(this.adapter, request, this.clockReadings) : undefined,
    );
    return Promise.all([written, Promise.all(read)]).then(([writerAnswers, readAnswers]) => {
      let w = 0;
      const answers: ExtendAnswers = batch.map((_, i) => readAnswers[i]?.[0] ?? writerAnswers[w++]!);
      // Under the guard each call read the node's clock: the first one stands for the batch.
      const clockUs = writerAnswers.clockUs ?? readAnswers.find((r) => r?.clockUs !== undefined)?.clockUs;
      if (clockUs !== undefined) answers.clockUs = clockUs;
      return answers;
    });
  }
}
