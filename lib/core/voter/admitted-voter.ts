import { RELEASE, type AcquireVote } from '../scripts/index.js';
import { ServerChangedError } from './admitted-client.js';
import type { ScriptClient } from './script-client.js';
import { ScriptVoter } from './script-voter.js';

/** How long a grant on an unchecked connection waits for that connection's check, at most, ms. */
const RECHECK_BOUND_MS = 5000;

/**
 * A ScriptVoter on an {@link AdmittedClient} whose client may send a lock command on a connection
 * that was not checked yet (node-redis replays its offline queue on a new connection before it
 * says 'ready'; GLIDE reconnects without a word; a node-redis or GLIDE cluster's master may have
 * changed under a slot: guarded-cluster-client.ts): the adapter throws ServerChangedError for such a
 * grant, and the voter lets go of it there and votes again once the new connection was checked
 * (the identity guard may then make it abstain).
 */
export class AdmittedVoter<C extends ScriptClient & { whenChecked(): Promise<void> }> extends ScriptVoter<C> {
  override acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
    expectedClockUs?: number,
  ): Promise<AcquireVote> {
    return super.acquire(keys, value, ttlMs, ticket, seedUs, expectedClockUs).catch((err: unknown) => {
      if (!(err instanceof ServerChangedError)) throw err;
      // The new connection may not even be up yet (node-redis replays its queue before 'ready'):
      // wait until it is checked, then let go of the grant there, then vote as the check says.
      return this.adapter
        .waitReady(RECHECK_BOUND_MS)
        .then(() => this.letGo(keys, value, RELEASE))
        .catch(() => undefined)
        .then(() => this.adapter.whenChecked())
        .then(() => super.acquire(keys, value, ttlMs, ticket, seedUs, expectedClockUs));
    });
  }
}
