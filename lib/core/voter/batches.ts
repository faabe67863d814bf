import {
  decodeExtendManyReply,
  decodeExtendOneReply,
  EXTEND,
  EXTEND_MANY,
  extendArgs,
  extendManyCall,
  type ExtendAnswers,
  type ExtendRequest,
} from '../scripts/extend.js';
import { SEED_SLOT_MARKERS } from '../scripts/guards.js';
import { keySlot, READERS_SUFFIX, slotMarkerKey, isReader } from '../scripts/keys.js';
import { LET_GO, RELEASE_MANY } from '../scripts/let-go.js';
import type { LuaScript } from '../scripts/lua.js';
import { READ_EXTEND_SCRIPT } from '../scripts/read.js';
import type { Runtime } from '../runtime.js';
import type { Transport } from '../transport/transport.js';
import { runScript } from './send.js';
import { type ScriptMode } from './server.js';

/** Runs a lock script routed by its first key. */
type Run = (script: LuaScript, keys: readonly string[], args: readonly string[]) => Promise<unknown>;

/**
 * A watchdog's batch of extensions on one voter: one EXTEND for a lock alone, one EXTEND_MANY for the
 * writers (per slot on a Cluster: a script cannot reach across slots, and then without the clock: the
 * slots may live on masters whose clocks are not one clock), each reader on its own.
 */
export function extendBatch(
  batch: readonly ExtendRequest[],
  clock: boolean,
  clustered: boolean,
  run: Run,
): Promise<ExtendAnswers> {
  const one = (request: ExtendRequest, withClock: boolean): Promise<ExtendAnswers> => {
    const key = request.keys[0]!;
    const args = extendArgs(request, withClock).map(String);
    return isReader(request.value)
      ? run(READ_EXTEND_SCRIPT, [key, key + READERS_SUFFIX], args).then(decodeExtendOneReply)
      : run(EXTEND, request.keys, args).then(decodeExtendOneReply);
  };
  if (batch.length === 1) return one(batch[0]!, clock);
  const groups = new Map<string, number[]>();
  batch.forEach((request, i) => {
    const group = isReader(request.value) ? `r${i}` : clustered ? `s${keySlot(request.keys[0]!)}` : 'w';
    const members = groups.get(group);
    if (members) members.push(i);
    else groups.set(group, [i]);
  });
  // A Cluster's slots may live on several masters: one clock reading stands for a batch of one slot only.
  const slot = keySlot(batch[0]!.keys[0]!);
  const withClock = clock && (!clustered || batch.every((request) => keySlot(request.keys[0]!) === slot));
  const answers: ExtendAnswers = new Array<boolean>(batch.length).fill(false);
  const calls = [...groups.values()].map((indices) => {
    const requests = indices.map((i) => batch[i]!);
    const sent =
      indices.length === 1
        ? one(requests[0]!, withClock)
        : (() => {
            const { keys, args } = extendManyCall(requests, withClock);
            return run(EXTEND_MANY, keys, args.map(String)).then((reply) =>
              decodeExtendManyReply(reply, indices.length),
            );
          })();
    return sent.then((reply) => {
      indices.forEach((i, j) => (answers[i] = reply[j]!));
      if (reply.clockUs !== undefined) answers.clockUs = reply.clockUs;
    });
  });
  return Promise.all(calls).then(() => answers);
}

/** Most releases per call: bounds how long one call keeps a server busy. */
const MOST_RELEASES = 500;

interface PendingRelease {
  /** LET_GO's keys for one resource: its lock key, fence counter and queue. */
  readonly keys: readonly string[];
  readonly value: string;
  readonly settled: { resolve(reply: unknown): void; reject(err: unknown): void };
}

/**
 * A voter's releases of single-resource locks: the first of a tick goes at once (a lone caller's
 * release waits for nothing), the others of that tick together at its end, as one RELEASE_MANY, or
 * before any other command of the voter (`flush`), so that what the engine sends the voter after a
 * release reaches the server after it. Many locks released at once then cost two calls, not one each.
 */
export class ReleaseBatch {
  /** A tick is open: its first release went, its end is scheduled. */
  private open = false;
  private pending: PendingRelease[] = [];
  private sent: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly runtime: Runtime,
    private readonly run: Run,
    private readonly settings: string,
    /** The transport's `written`, when it batches writes. */
    private readonly transportWritten: (() => Promise<void> | undefined) | undefined,
  ) {}

  /** Releases `value` of one resource (`keys`: LET_GO's); settles with the call's reply. */
  add(keys: readonly string[], value: string): Promise<unknown> {
    if (!this.open) {
      this.open = true;
      this.runtime.endOfTick(this.close);
      return this.run(LET_GO, keys, [value, this.settings, 'release']);
    }
    return new Promise((resolve, reject) => this.pending.push({ keys, value, settled: { resolve, reject } }));
  }

  /** Resolves once the releases added so far left for the socket; undefined: they have. */
  readonly written = (): Promise<void> | undefined => {
    if (this.pending.length === 0) return this.transportWritten?.();
    this.sent ??= deferred();
    return this.sent.promise;
  };

  /** Sends the releases waiting, if any. */
  flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    for (let i = 0; i < batch.length; i += MOST_RELEASES) this.send(batch.slice(i, i + MOST_RELEASES));
    const sent = this.sent;
    this.sent = undefined;
    if (sent) void (this.transportWritten?.() ?? Promise.resolve()).then(sent.resolve);
  }

  private readonly close = (): void => {
    this.flush();
    this.open = false;
  };

  private send(batch: readonly PendingRelease[]): void {
    const only = batch.length === 1 ? batch[0] : undefined;
    const call = only
      ? this.run(LET_GO, only.keys, [only.value, this.settings, 'release'])
      : this.run(
          RELEASE_MANY,
          batch.flatMap((release) => release.keys),
          [String(batch.length), this.settings, ...batch.map((release) => release.value)],
        );
    call.then(
      (reply) => batch.forEach((release) => release.settled.resolve(reply)),
      (err: unknown) => batch.forEach((release) => release.settled.reject(err)),
    );
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** Slots whose markers one seeding call covers. */
const SEED_CHUNK = 256;

/**
 * Seeds the restart-guard markers of every slot of a Cluster, a chunk of a shard's slots per call
 * (a short script: lock traffic goes on in between), until `stopped` says so. A shard that fails to
 * seed gets its markers from the first acquire on each slot instead, which only starts its guard later.
 */
export async function seedSlotMarkers(
  transport: Transport,
  guardKey: string,
  guardMs: number,
  stopped: () => boolean,
  mode: ScriptMode = 'eval',
): Promise<void> {
  await Promise.all(
    [...transport.shards()].map(async ([shard, slots]) => {
      const markers = slots.map((slot) => slotMarkerKey(guardKey, slot));
      const send = (command: readonly string[]) => transport.send({ shard }, command);
      for (let from = 0; from < markers.length && !stopped(); from += SEED_CHUNK) {
        const chunk = markers.slice(from, from + SEED_CHUNK);
        // A shard that fails a chunk (down, CLUSTERDOWN) is left to its first acquires, slot by slot.
        const seeded = await runScript(send, SEED_SLOT_MARKERS, [], [String(guardMs), ...chunk], {
          mode,
          bySource: from === 0,
        }).then(
          () => true,
          () => false,
        );
        if (!seeded) return;
      }
    }),
  );
}
