import { inspectKey, inspectReaders, inspectSemaphore, type LockInspection } from '../quorum/inspect.js';
import type { NodeStatus } from '../quorum/health.js';
import { normaliseResources } from '../resolve-options.js';
import { lockKeyOf, PERMITS_MARK, READ_MARKER } from '../scripts/keys.js';
import type { SemaphoreUses } from './key-uses.js';
import type { EngineParts } from './parts.js';
import { slotKeys } from './semaphore-request.js';
import type { WakeChannel } from './wake-channel.js';

/*
 * What the engine (redlock.ts) reports without taking a lock: each node's status with its wake-up
 * subscription, and what a majority says of one lock.
 */

/** Each node's status, with the error of its wake-up subscription when it has one. */
export function withSubscriptions(statuses: NodeStatus[], wakes: WakeChannel): NodeStatus[] {
  return statuses.map((status, i) => {
    const subscriptionError = wakes.subscriptionError(i);
    return subscriptionError === undefined ? status : { ...status, subscriptionError };
  });
}

/** `Redlock.inspect`: `semaphores` are the keys the engine uses as semaphores or read-write locks. */
export async function inspectLock(
  parts: EngineParts,
  semaphores: SemaphoreUses,
  resource: string,
): Promise<LockInspection> {
  const [name] = normaliseResources(resource); // a bad name rejects, as every other failure does
  const { voters } = parts;
  const { nodeTimeout } = parts.options;
  const lockKey = lockKeyOf(parts.options.keyPrefix, name!);
  // A semaphore (this engine used it, or its marker holds the key): its slots' views.
  const known = semaphores.permitsOf(name!);
  if (known) return inspectSemaphore(voters, name!, slotKeys(lockKey, known), nodeTimeout);
  const { inspection, holder } = await inspectKey(voters, name!, lockKey, nodeTimeout);
  if (holder === READ_MARKER) return inspectReaders(voters, lockKey, inspection, nodeTimeout);
  if (!holder?.startsWith(PERMITS_MARK)) return inspection;
  const permits = Number(holder.slice(PERMITS_MARK.length));
  return inspectSemaphore(voters, name!, slotKeys(lockKey, permits), nodeTimeout);
}
