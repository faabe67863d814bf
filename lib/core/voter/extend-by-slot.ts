import { decodeExtendManyReply, extendManyCall, SCRIPTS, type ExtendRequest } from '../scripts/index.js';
import type { ScriptClient } from './script-client.js';

/*
 * A watchdog's batch of extensions on a client that routes by slot (a Redis Cluster): a script
 * cannot reach across slots, so a batch whose locks live in several slots goes as one EXTEND_MANY
 * per slot (script-voter.ts extend).
 */

/**
 * One EXTEND_MANY per slot of the batch, in parallel, on `adapter`: one answer per request, in
 * order. No clock reading: the slots may live on several masters, whose clocks are not one clock.
 */
export function extendBySlot(
  adapter: ScriptClient,
  batch: readonly ExtendRequest[],
  keySlot: (key: string) => number,
): Promise<boolean[]> {
  const bySlot = new Map<number, number[]>();
  batch.forEach((request, i) => {
    const slot = keySlot(request.keys[0]!);
    const group = bySlot.get(slot);
    if (group) group.push(i);
    else bySlot.set(slot, [i]);
  });
  const answers = new Array<boolean>(batch.length).fill(false);
  const calls = [...bySlot.values()].map((indices) => {
    const { keys, args } = extendManyCall(indices.map((i) => batch[i]!));
    return adapter
      .run(SCRIPTS.extendMany, keys, args, (reply) => decodeExtendManyReply(reply, indices.length))
      .then((reply) => indices.forEach((i, j) => (answers[i] = reply[j]!)));
  });
  return Promise.all(calls).then(() => answers);
}

/** Whether every lock of `batch` is in one slot (one EXTEND_MANY, with the clock, serves it). */
export function inOneSlot(batch: readonly ExtendRequest[], keySlot: (key: string) => number): boolean {
  const slot = keySlot(batch[0]!.keys[0]!);
  for (let i = 1; i < batch.length; i++) if (keySlot(batch[i]!.keys[0]!) !== slot) return false;
  return true;
}
