import { FENCE_SUFFIX, queueKeyOf, readersKeyOf } from '../keys.js';
import {
  decodeAcquireReply,
  decodeReadersReply,
  decodeRaiseFenceReply,
  decodeExtendOneReply,
  extendArgs,
  SCRIPTS,
  type AcquireVote,
  type ExtendAnswers,
  type ExtendRequest,
  type LetGo,
  type ScriptCalls,
} from '../scripts/index.js';
import type { ScriptClient } from './script-client.js';

/*
 * A reader's operations on a Redis voter (scripts/read.ts): the keys and arguments of the read
 * scripts. ScriptVoter routes here by the value (a reader's ends with READ_MARK), so the engine
 * calls a reader's acquire, extension, release and fence raise through the Voter interface as
 * it does a writer's.
 */

/** The declared keys of a resource's read scripts: lock key, fence counter, queue, readers. */
export function readKeys(lockKey: string): string[] {
  return [lockKey, lockKey + FENCE_SUFFIX, queueKeyOf(lockKey), readersKeyOf(lockKey)];
}

/** READ_ACQUIRE on `lockKey` (the restart-guard `marker` last). */
export function readAcquire(
  adapter: ScriptClient,
  calls: ScriptCalls,
  lockKey: string,
  value: string,
  ttlMs: number,
  ticket: string,
  seedUs: number | undefined,
): Promise<AcquireVote> {
  let keys: string[];
  try {
    keys = [...readKeys(lockKey), adapter.markerKey([lockKey])];
  } catch (err) {
    return Promise.reject(err as Error);
  }
  const args = [value, calls.readSettings, String(Math.ceil(ttlMs)), ticket, seedUs?.toFixed(0) ?? ''];
  return adapter.run(SCRIPTS.readAcquire, keys, args, decodeAcquireReply);
}

/**
 * READ_EXTEND for one reader of the batch, as the answers to a batch of one; `clock`: ask for the
 * node's clock (the clock guard), as EXTEND does.
 */
export function readExtend(
  adapter: ScriptClient,
  request: ExtendRequest,
  clock = false,
): Promise<ExtendAnswers> {
  const lockKey = request.keys[0]!;
  // READ_EXTEND takes EXTEND's arguments: value, ttl, and the clock flag.
  const args = extendArgs(request, clock);
  return adapter.run(SCRIPTS.readExtend, [lockKey, readersKeyOf(lockKey)], args, decodeExtendOneReply);
}

/** READ_LET_GO's arguments: a reader's release, requeue or departure from the line. */
export function readLetGoArgs(calls: ScriptCalls, value: string, how: LetGo): string[] {
  const args = [value, calls.handOverSettings, how.op];
  if (how.op === 'requeue') args.push(how.ticket, how.renamedTo ?? value);
  return args;
}

/** READ_LET_GO: a reader's release, requeue or departure from the line. */
export function readLetGo(
  adapter: ScriptClient,
  calls: ScriptCalls,
  lockKey: string,
  value: string,
  how: LetGo,
): Promise<unknown> {
  const args = readLetGoArgs(calls, value, how);
  return adapter.run(SCRIPTS.readLetGo, readKeys(lockKey), args, (reply) => reply);
}

/** READ_RAISE_FENCE: raises the counter to the read's token while the reader holds the key. */
export function readRaiseFence(
  adapter: ScriptClient,
  calls: ScriptCalls,
  lockKey: string,
  value: string,
  token: number,
): Promise<boolean> {
  const keys = [lockKey, lockKey + FENCE_SUFFIX, readersKeyOf(lockKey)];
  return adapter.run(
    SCRIPTS.readRaiseFence,
    keys,
    [value, calls.fenceIdleMs, String(token)],
    decodeRaiseFenceReply,
  );
}

/** READ_INSPECT: the live readers of `lockKey` on this voter. */
export function readInspect(adapter: ScriptClient, lockKey: string): Promise<string[]> {
  return adapter.run(SCRIPTS.readInspect, [lockKey, readersKeyOf(lockKey)], [], decodeReadersReply);
}
