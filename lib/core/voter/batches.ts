import { ACQUIRE } from '../scripts/acquire.js';
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
import { RAISE_FENCE } from '../scripts/fence.js';
import { SEED_SLOT_MARKERS } from '../scripts/guards.js';
import { INSPECT } from '../scripts/inspect.js';
import { keySlot, READERS_SUFFIX, slotMarkerKey, isReader } from '../scripts/keys.js';
import { LET_GO } from '../scripts/let-go.js';
import type { LuaScript } from '../scripts/lua.js';
import {
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_INSPECT_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
} from '../scripts/read.js';
import { SEMAPHORE_ACQUIRE_SCRIPT } from '../scripts/semaphore.js';
import type { Transport } from '../transport/transport.js';
import { runScript } from './send.js';
import { type ScriptMode } from './server.js';

/** The lock's scripts, loaded on every new connection so that calls rarely meet NOSCRIPT. */
export const LOCK_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE,
  LET_GO,
  EXTEND,
  EXTEND_MANY,
  RAISE_FENCE,
  INSPECT,
  SEMAPHORE_ACQUIRE_SCRIPT,
  READ_ACQUIRE_SCRIPT,
  READ_EXTEND_SCRIPT,
  READ_LET_GO_SCRIPT,
  READ_RAISE_FENCE_SCRIPT,
  READ_INSPECT_SCRIPT,
];

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
