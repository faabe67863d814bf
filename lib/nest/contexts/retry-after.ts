import { EngineClosedError, LockNotAcquiredError } from '../../core/index.js';
import { typicalHoldOf } from '../typical-hold.js';
import type { MappedLockError } from './payload.js';

/**
 * The engine's default `retryDelay`: the fallback hint for a busy lock when nothing better is
 * known (the interceptor passes the module's own value).
 */
const DEFAULT_RETRY_DELAY_MS = 200;

/**
 * The hint for a call turned away because its instance shuts down: another instance (or this one
 * restarted) serves it, typically within a second.
 */
const ENGINE_CLOSED_RETRY_MS = 1000;

/**
 * When a client should try again, in ms: the ONE place where every context's retry hint (HTTP's
 * `Retry-After` and body, the `retryAfterMs` of RPC, WebSocket and GraphQL payloads) is decided.
 *
 * A busy lock: the typical time the method that raised it holds its lock (from its runs in this
 * process), at least `retryDelay` (the pace at which the engine itself retries: a shorter hint only
 * invites clients to hammer), and never more than the holder's remaining lease. Why not the
 * remaining lease itself: leases are sized for the worst case and kept alive by the watchdog, so
 * a route that holds its lock 300 ms under a 10 s ttl would tell clients to wait 10 s for a lock
 * that is free 0.3 s later; a retry that comes too early costs one more 409, one that comes too
 * late costs the user the whole difference. The remaining lease stays the upper bound: the lock
 * is free by then unless its holder extends it.
 *
 * An instance that shuts down: a second (another instance serves the retry).
 *
 * A lost quorum: the time until a quorum votes again when the engine knows it (voters abstaining
 * under the restart guard), else undefined (nodes are down: nobody can tell when they return).
 */
export function retryAfterMs(
  err: MappedLockError,
  retryDelayMs = DEFAULT_RETRY_DELAY_MS,
): number | undefined {
  if (err instanceof EngineClosedError) return ENGINE_CLOSED_RETRY_MS;
  // Whole ms, rounded up, whatever the engine computed: clients read them in bodies and messages.
  if (!(err instanceof LockNotAcquiredError)) return wholeMs(err.retryAfterMs);
  const typical = Math.max(retryDelayMs, Math.ceil(typicalHoldOf(err) ?? 0));
  return Math.max(1, Math.ceil(Math.min(err.retryAfterMs, typical)));
}

function wholeMs(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.ceil(ms);
}

/** The same hint as an HTTP `Retry-After` (whole seconds, at least 1; 1 when unknown). */
export function retryAfterSeconds(ms: number | undefined): number {
  return ms === undefined ? 1 : Math.max(1, Math.ceil(ms / 1000));
}
