import { IdentityGuard, ServerChangedError } from '../guards/identity.js';
import { settleWithin } from '../runtime.js';
import { ACQUIRE, decodeAcquireReply, type AcquireVote } from '../scripts/acquire.js';
import { RAISE_FENCE } from '../scripts/fence.js';
import {
  CLOCK_MARK,
  decodeClockMarkReply,
  fenceCounterPattern,
  RUN_ID,
  type ClockMark,
} from '../scripts/guards.js';
import { decodeInspectReply, INSPECT, type KeyView } from '../scripts/inspect.js';
import {
  FENCE_SUFFIX,
  keyPrefixOf,
  keySlot,
  queueKeyOf,
  READERS_SUFFIX,
  slotMarkerKey,
} from '../scripts/keys.js';
import { LET_GO, RELEASE, type LetGo } from '../scripts/let-go.js';
import {
  decodeReadersReply,
  READ_ACQUIRE_SCRIPT,
  READ_INSPECT_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
} from '../scripts/read.js';
import { decodeSlotReply, SEMAPHORE_ACQUIRE_SCRIPT, type SlotVote } from '../scripts/semaphore.js';
import type { LuaScript } from '../scripts/lua.js';
import { settingsArg } from '../scripts/settings.js';
import { isReader, wakeChannelOf } from '../scripts/values.js';
import type { Route, Transport } from '../transport/transport.js';
import { describeError, isFinalFault, nodeErrorLine, nodeFault } from './describe-error.js';
import { extendBatch, LOCK_SCRIPTS, seedSlotMarkers } from './batches.js';
import { SendOrder } from './send-order.js';
import { runScript, type ScriptMode } from './server.js';
import type { Voter, VoterContext } from './voter-api.js';
import type { ExtendAnswers, ExtendRequest } from '../scripts/extend.js';

/** How long a vote on a changed server waits for its check before it votes again, at most, ms. */
const RECHECK_BOUND_MS = 5000;

/**
 * The one voter: the lock's operations (their scripts, keys, arguments and replies), the identity
 * guard and preflight per shard (guards/identity.ts), routing by slot and health, over a
 * {@link Transport} that only talks to its client. The same for every client and topology.
 */
export class TransportVoter implements Voter {
  private readonly guard: IdentityGuard;
  private readonly settings: string;
  private readonly scripts: ScriptMode;
  private readonly healthListeners: Array<(up: boolean, reason?: string) => void> = [];
  private readonly abstentionListeners: Array<(forMs: number, why: string, shard?: string) => void> = [];
  /** The order of this voter's acquires and let-gos of a lock (send-order.ts). */
  private readonly order: SendOrder;
  private reported: string | undefined;
  /** Waiters of waitReady, told of a final refusal (credentials, ACL) from the transport. */
  private readonly refusedListeners = new Set<() => void>();
  private seeding: Promise<void> | undefined;
  private closing = false;

  constructor(
    readonly transport: Transport,
    private readonly context: VoterContext,
  ) {
    this.settings = settingsArg(context.settings);
    this.scripts = context.scripts ?? 'eval';
    this.order = new SendOrder(transport.clustered || this.scripts === 'functions');
    const { settings, runtime, logger } = context;
    this.guard = new IdentityGuard(transport, this, {
      runtime,
      logger,
      guardMs: settings.guardMs,
      timeoutMs: Math.max(context.connectTimeout, 1000),
      preflight: context.preflight,
      scripts: this.scripts,
      wakeChannel: wakeChannelOf('preflight'),
      keyPrefix: keyPrefixOf(settings.guardKey),
      markerOf: (shard) => this.shardMarker(shard),
      onAbstention: (shard, forMs, why) => {
        for (const listener of this.abstentionListeners)
          listener(forMs, why, transport.clustered ? shard : undefined);
      },
      onCheckFailed: (err) => this.reportError(err),
      prepare: (shard) => {
        // Functions: the identity guard's check made sure that the library is there.
        if (this.scripts === 'functions') return;
        // A transport that does not see reconnections reads the run_id behind its votes: load it too.
        const scripts = transport.seesReconnects ? LOCK_SCRIPTS : [...LOCK_SCRIPTS, RUN_ID];
        for (const script of scripts)
          transport.send({ shard }, ['SCRIPT', 'LOAD', script.source]).catch(() => undefined);
      },
    });
    transport.on((event) => {
      if (event.type === 'error') {
        if (isFinalFault(nodeFault(event.error))) for (const refused of this.refusedListeners) refused();
        return this.reportError(event.error);
      }
      if (event.type === 'up') {
        if (this.reported === 'auth')
          logger.log(`Redis node ${this.label} accepts the credentials now: connected again`);
        else if (this.reported !== undefined) logger.log(`Redis node ${this.label} is reachable again`);
        this.reported = undefined;
        if (transport.clustered && !this.seeding) this.seeding = this.seed();
      }
      if (event.type === 'connected') return;
      for (const listener of this.healthListeners)
        listener(event.type === 'up', event.type === 'down' ? event.reason : undefined);
    });
  }

  get label(): string {
    return this.transport.label;
  }

  get connected(): boolean {
    if (!this.transport.up || this.guard.refusal() !== undefined) return false;
    return this.transport.clustered || this.guard.readiness('').reason === undefined;
  }

  get server(): string | undefined {
    return this.guard.software();
  }

  get serverIds(): readonly string[] {
    return this.guard.serverIds();
  }

  get pending(): boolean {
    if (this.guard.refusal() !== undefined) return false;
    if (!this.transport.up) return this.transport.lastError === undefined;
    if (this.guard.checking !== undefined) return true;
    // Up: pending until every shard it reaches was checked (a check that failed is tried again).
    return [...this.transport.shards().keys()].some(
      (shard) => this.guard.readiness(shard).reason !== undefined,
    );
  }

  get connectionError(): string | undefined {
    if (this.connected) return undefined;
    if (!this.transport.up) return this.transport.lastError ?? 'not connected';
    return this.guard.refusal() ?? this.guard.readiness('').reason;
  }

  async waitReady(timeoutMs: number): Promise<boolean> {
    const started = this.context.runtime.now();
    // A refused login or permission is final until someone changes the node: no use waiting for it.
    let onRefused!: () => void;
    const refused = new Promise<false>((resolve) =>
      this.refusedListeners.add((onRefused = () => resolve(false))),
    );
    const up = await Promise.race([this.transport.connect(timeoutMs), refused]);
    this.refusedListeners.delete(onRefused);
    if (!up) return false;
    const left = timeoutMs - (this.context.runtime.now() - started);
    for (const shard of this.transport.shards().keys()) this.guard.readiness(shard);
    const checking = this.guard.checking;
    if (checking) await settleWithin(this.context.runtime, checking, left);
    return this.connected;
  }

  acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): Promise<AcquireVote> {
    const key = keys[0]!;
    const seed = seedUs === undefined ? '' : seedUs.toFixed(0);
    let send: () => Promise<AcquireVote>;
    if (isReader(value)) {
      const readKeys = [key, key + FENCE_SUFFIX, queueKeyOf(key), key + READERS_SUFFIX, this.markerOf(key)];
      const args = [value, this.settings, String(Math.ceil(ttlMs)), ticket, seed];
      send = () => this.runVote(value, READ_ACQUIRE_SCRIPT, readKeys, args).then(decodeAcquireReply);
    } else {
      const args = [value, this.settings, String(Math.ceil(ttlMs)), ticket, seed];
      if (this.context.settings.clockReadings)
        args.push(expectedClockUs === undefined ? '' : String(expectedClockUs));
      const all = [...declaredKeys(keys), this.markerOf(key)];
      send = () => this.runVote(value, ACQUIRE, all, args).then(decodeAcquireReply);
    }
    return this.voteAgainOnChange(keys, value, () =>
      this.vote(key, value, send, (forMs) => ({ kind: 'abstaining', forMs })),
    );
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
    const keys = [
      ...slotKeys,
      ...slotKeys.map((k) => k + FENCE_SUFFIX),
      queueKeyOf(slotKeys[0]!),
      lockKey,
      lockKey + FENCE_SUFFIX,
      this.markerOf(lockKey),
    ];
    const args = [
      value,
      this.settings,
      String(Math.ceil(ttlMs)),
      ticket,
      seedUs?.toFixed(0) ?? '',
      String(permits),
    ];
    const send = () => this.runVote(value, SEMAPHORE_ACQUIRE_SCRIPT, keys, args).then(decodeSlotReply);
    return this.voteAgainOnChange(slotKeys, value, () =>
      this.vote(slotKeys[0]!, value, send, (forMs): SlotVote => ({ kind: 'abstaining', forMs })),
    );
  }

  raiseFence(keys: readonly string[], value: string, tokens: readonly number[]): Promise<boolean> {
    const key = keys[0]!;
    const raised = (reply: unknown) => reply === 1;
    if (isReader(value)) {
      return this.run(
        READ_RAISE_FENCE_SCRIPT,
        [key, key + FENCE_SUFFIX, key + READERS_SUFFIX],
        [value, this.settings, String(tokens[0])],
      ).then(raised);
    }
    const fenced = [...keys, ...keys.map((k) => k + FENCE_SUFFIX)];
    return this.run(RAISE_FENCE, fenced, [value, this.settings, ...tokens.map(String)]).then(raised);
  }

  extend(batch: readonly ExtendRequest[]): Promise<ExtendAnswers> {
    return extendBatch(
      batch,
      this.context.settings.clockReadings === true,
      this.transport.clustered,
      (script, keys, args) => this.run(script, keys, args),
    );
  }

  letGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown> {
    const send = () => this.sendLetGo(keys, value, how);
    return this.order.letGo(keys, value, send);
  }

  written(): Promise<void> | undefined {
    return this.transport.written?.();
  }

  /** A let-go sent now (the acquire's own, when its vote ran on a changed server). */
  private sendLetGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown> {
    const key = keys[0]!;
    const args = [value, this.settings, how.op];
    if (how.op === 'requeue') {
      args.push(how.ticket, how.renamedTo ?? value);
      if (how.passOn) args.push('1');
    }
    return isReader(value)
      ? this.run(READ_LET_GO_SCRIPT, [key, key + FENCE_SUFFIX, queueKeyOf(key), key + READERS_SUFFIX], args)
      : this.run(LET_GO, declaredKeys(keys), args);
  }

  markClockStep(forMs: number, steppedPastMs?: number): Promise<ClockMark> {
    const pattern = fenceCounterPattern(keyPrefixOf(this.context.settings.guardKey));
    const past =
      steppedPastMs === undefined || !this.transport.clustered ? '' : String(Math.floor(steppedPastMs));
    const shards = this.transport.clustered ? [...this.transport.shards()] : [['', [] as number[]] as const];
    const marks = shards.map(([shard, slots]) => {
      const markers = this.transport.clustered
        ? slots.map((slot) => slotMarkerKey(this.context.settings.guardKey, slot))
        : [this.context.settings.guardKey];
      const send = (command: readonly string[]) => this.transport.send({ shard }, command);
      return runScript(send, CLOCK_MARK, [], [String(Math.ceil(forMs)), pattern, past, ...markers], {
        mode: this.scripts,
        bySource: true,
      }).then(decodeClockMarkReply);
    });
    return Promise.all(marks).then((all) => ({
      abstainMs: Math.max(0, ...all.map((m) => m.abstainMs)),
      countersDropped: all.reduce((sum, m) => sum + m.countersDropped, 0),
    }));
  }

  inspect(lockKey: string): Promise<KeyView> {
    return this.run(INSPECT, [lockKey, lockKey + FENCE_SUFFIX], []).then(decodeInspectReply);
  }

  inspectReaders(lockKey: string): Promise<string[]> {
    return this.run(READ_INSPECT_SCRIPT, [lockKey, lockKey + READERS_SUFFIX], []).then(decodeReadersReply);
  }

  /** The ms the shard of `keys` abstains for from now under the identity guard (0: it votes). */
  abstainingForMs(keys: readonly string[]): number {
    const shard = this.transport.shardOf(keys[0]!);
    return shard === undefined ? 0 : this.guard.abstainingForMs(shard);
  }

  async ping(): Promise<void> {
    await this.transport.send(undefined, ['PING']);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.transport.subscribe(channel, onMessage);
  }

  onHealthChange(listener: (up: boolean, reason?: string) => void): void {
    this.healthListeners.push(listener);
  }

  onAbstention(listener: (forMs: number, why: string, shard?: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  /** Why a command failed, log-safe; while the transport is down, its own last error says more. */
  failureReason(err: unknown): string {
    const message = describeError(err);
    const { lastError, up } = this.transport;
    return !up && lastError !== undefined && lastError !== message ? `not connected: ${lastError}` : message;
  }

  async close(timeoutMs: number): Promise<void> {
    this.closing = true;
    await Promise.all([
      this.guard.close(timeoutMs),
      this.seeding && settleWithin(this.context.runtime, this.seeding, timeoutMs),
    ]);
    await this.transport.close(timeoutMs);
  }

  /** Runs a vote's script: met by NOSCRIPT, it is not sent again once `value` was let go of since. */
  private runVote(value: string, script: LuaScript, keys: readonly string[], args: readonly string[]) {
    const mark = this.order.letGoMark(value);
    return this.run(script, keys, args, () => !this.order.letGoSince(value, mark));
  }

  /** Runs a lock script routed by its first key (a keyless one: any shard). */
  private run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    resendIf?: () => boolean,
  ): Promise<unknown> {
    const route: Route = keys.length > 0 ? { key: keys[0]! } : undefined;
    const send = (command: readonly string[]) => this.transport.send(route, command);
    if (this.scripts === 'eval') return runScript(send, script, keys, args, { resendIf });
    return runScript(send, script, keys, args, { mode: 'functions', loadVia: this.loadVia(keys[0]) });
  }

  /** Where FUNCTION LOAD goes for a script on `key`: its shard (a keyless command could go anywhere). */
  private loadVia(key: string | undefined): (command: readonly string[]) => Promise<unknown> {
    const shard = key === undefined ? undefined : this.transport.shardOf(key);
    const route: Route = shard === undefined ? undefined : { shard };
    return (command) => this.transport.send(route, command);
  }

  /**
   * A vote of the shard of `key`: once its server is checked, abstaining or sent and confirmed. A
   * Cluster's abstention names its shard: the engine holds it against that shard's slots only.
   */
  private vote<T extends { readonly kind: string }>(
    key: string,
    value: string,
    send: () => Promise<T>,
    abstaining: (forMs: number) => T,
  ): Promise<T> {
    const shard = this.transport.shardOf(key);
    if (shard === undefined) return Promise.reject(new Error(`no master known for the slot of ${key}`));
    const own = this.transport.clustered ? shard : undefined;
    const named = (vote: T): T =>
      own !== undefined && vote.kind === 'abstaining' ? { ...vote, shard: own } : vote;
    const now = () => {
      const forMs = this.guard.abstainingForMs(shard);
      return forMs > 0
        ? Promise.resolve(named(abstaining(forMs)))
        : own === undefined
          ? this.guard.confirm(shard, send, { key })
          : this.guard.confirm(shard, send, { key }).then(named);
    };
    const { reason, pending } = this.guard.readiness(shard);
    if (reason === undefined) return now();
    if (!pending) return Promise.reject(new Error(reason));
    const voting = pending.then(() => {
      const still = this.guard.readiness(shard).reason;
      return still === undefined ? now() : Promise.reject(new Error(still));
    });
    this.order.hold(value, pending); // a let-go of this value goes after the vote is sent
    return voting;
  }

  /**
   * A vote that ran on a changed server (ServerChangedError) is let go of there and cast again once
   * the new server was checked (whose identity guard may make it abstain). Ordered with this
   * voter's let-gos of the same keys (send-order.ts).
   */
  private voteAgainOnChange<T>(keys: readonly string[], value: string, vote: () => Promise<T>): Promise<T> {
    const send = () =>
      vote().catch((err: unknown) => {
        if (!(err instanceof ServerChangedError)) throw err;
        const checked = this.guard.checking ?? Promise.resolve();
        const waiting = this.sendLetGo(keys, value, RELEASE)
          .catch(() => undefined)
          .then(() => settleWithin(this.context.runtime, checked, RECHECK_BOUND_MS));
        const voting = waiting.then(vote);
        this.order.hold(value, waiting);
        return voting;
      });
    return this.order.acquire(keys, value, send);
  }

  /** The restart-guard marker of a lock key: the server's, or on a Cluster its slot's. */
  private markerOf(key: string): string {
    const { guardKey } = this.context.settings;
    return this.transport.clustered ? slotMarkerKey(guardKey, keySlot(key)) : guardKey;
  }

  /** The marker beside which `shard`'s identity record sits: the server's, or its lowest slot's. */
  private shardMarker(shard: string): string {
    const { guardKey } = this.context.settings;
    if (!this.transport.clustered) return guardKey;
    const slots = this.transport.shards().get(shard) ?? [0];
    return slotMarkerKey(guardKey, Math.min(...slots));
  }

  private seed(): Promise<void> {
    const { guardKey, guardMs } = this.context.settings;
    return seedSlotMarkers(this.transport, guardKey, guardMs, () => this.closing, this.scripts).catch(
      () => undefined,
    );
  }

  /**
   * A transport error: logged once per kind of fault in a row. Losing a node is one kind whatever
   * its messages (a kill is the dropped socket, then each refused reconnection): one line until it
   * is reachable again.
   */
  private reportError(err: unknown): void {
    const kind = nodeFault(err) ?? 'unavailable';
    if (kind !== this.reported) this.context.logger.warn(nodeErrorLine(this.label, err));
    this.reported = kind;
  }
}

/** The declared keys of a resource's lock scripts: lock keys, their fence counters, their queues. */
function declaredKeys(lockKeys: readonly string[]): string[] {
  return [...lockKeys, ...lockKeys.map((key) => key + FENCE_SUFFIX), ...lockKeys.map(queueKeyOf)];
}
