import { ServerChangedError } from '../guards/identity.js';
import { settleWithin } from '../runtime.js';
import { ACQUIRE, decodeAcquireReply, type AcquireVote } from '../scripts/acquire.js';
import { RAISE_FENCE } from '../scripts/fence.js';
import { decodeInspectReply, INSPECT, type KeyView } from '../scripts/inspect.js';
import {
  FENCE_SUFFIX,
  keySlot,
  queueKeyOf,
  READERS_SUFFIX,
  slotMarkerKey,
  isReader,
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
import type { Route, Transport } from '../transport/transport.js';
import { extendBatch, ReleaseBatch } from './batches.js';
import { VoterConnection } from './connection.js';
import { runScript, SendOrder } from './send.js';
import type { Voter, VoterContext } from './voter-api.js';
import type { ExtendAnswers, ExtendRequest } from '../scripts/extend.js';

/** How long a vote on a changed server waits for its check before it votes again, at most, ms. */
const RECHECK_BOUND_MS = 5000;

/**
 * The one voter: the lock's operations (their scripts, keys, arguments and replies) and their
 * routing by slot and health, over a {@link Transport} that only talks to its client; the identity
 * guard and preflight per shard, health and readiness are its connection's (connection.ts, which
 * it extends). The same for every client and topology.
 */
export class TransportVoter extends VoterConnection implements Voter {
  private readonly settings: string;
  /** The order of this voter's acquires and let-gos of a lock (send.ts). */
  private readonly order: SendOrder;
  /** Single-resource releases, one call per tick (batches.ts); flushed before any other command. */
  private readonly releases: ReleaseBatch;
  /** Voter.written: the release batch's, then its transport's. */
  readonly written: () => Promise<void> | undefined;

  constructor(transport: Transport, context: VoterContext) {
    super(transport, context);
    this.settings = settingsArg(context.settings);
    this.order = new SendOrder(transport.clustered || this.scripts === 'functions');
    this.releases = new ReleaseBatch(
      context.runtime,
      (script, keys, args) => this.run(script, keys, args),
      this.settings,
      transport.written,
    );
    this.written = this.releases.written;
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
      send = () => this.run(READ_ACQUIRE_SCRIPT, readKeys, args, value).then(decodeAcquireReply);
    } else {
      const args = [value, this.settings, String(Math.ceil(ttlMs)), ticket, seed];
      if (this.context.settings.clockReadings)
        args.push(expectedClockUs === undefined ? '' : String(expectedClockUs));
      const all = [...declaredKeys(keys), this.markerOf(key)];
      send = () => this.run(ACQUIRE, all, args, value).then(decodeAcquireReply);
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
    const send = () => this.run(SEMAPHORE_ACQUIRE_SCRIPT, keys, args, value).then(decodeSlotReply);
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

  /** A let-go sent now (the acquire's own, when its vote ran on a changed server). */
  private sendLetGo(keys: readonly string[], value: string, how: LetGo): Promise<unknown> {
    const key = keys[0]!;
    // A Cluster's keys may sit in other slots: one call cannot take them together.
    if (how.op === 'release' && keys.length === 1 && !isReader(value) && !this.transport.clustered)
      return this.releases.add([key, key + FENCE_SUFFIX, queueKeyOf(key)], value);
    const args = [value, this.settings, how.op];
    if (how.op === 'requeue') {
      args.push(how.ticket, how.renamedTo ?? value);
      if (how.passOn) args.push('1');
    }
    return isReader(value)
      ? this.run(READ_LET_GO_SCRIPT, [key, key + FENCE_SUFFIX, queueKeyOf(key), key + READERS_SUFFIX], args)
      : this.run(LET_GO, declaredKeys(keys), args);
  }

  inspect(lockKey: string): Promise<KeyView> {
    return this.run(INSPECT, [lockKey, lockKey + FENCE_SUFFIX], []).then(decodeInspectReply);
  }

  inspectReaders(lockKey: string): Promise<string[]> {
    return this.run(READ_INSPECT_SCRIPT, [lockKey, lockKey + READERS_SUFFIX], []).then(decodeReadersReply);
  }

  /**
   * Runs a lock script routed by its first key (a keyless one: any shard). A vote's (`voteOf`, the
   * value it casts) met by NOSCRIPT is not sent again once this voter let go of that value since.
   */
  private run(
    script: LuaScript,
    keys: readonly string[],
    args: readonly string[],
    voteOf?: string,
  ): Promise<unknown> {
    const route: Route = keys.length > 0 ? { key: keys[0]! } : undefined;
    const send = (command: readonly string[]) => {
      this.releases.flush(); // releases waiting for the end of the tick go first
      return this.transport.send(route, command);
    };
    if (this.scripts !== 'eval')
      return runScript(send, script, keys, args, { mode: 'functions', loadVia: this.loadVia(keys[0]) });
    if (voteOf === undefined) return runScript(send, script, keys, args);
    const mark = this.order.letGoMark(voteOf);
    return runScript(send, script, keys, args, { resendIf: () => !this.order.letGoSince(voteOf, mark) });
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
   * voter's let-gos of the same keys (send.ts).
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
}

/** The declared keys of a resource's lock scripts: lock keys, their fence counters, their queues. */
function declaredKeys(lockKeys: readonly string[]): string[] {
  return [...lockKeys, ...lockKeys.map((key) => key + FENCE_SUFFIX), ...lockKeys.map(queueKeyOf)];
}
