import { RELEASE, type AcquireVote } from '../scripts/index.js';
import { ServerChangedError, type AdmittedClient } from './admitted-client.js';
import { ScriptVoter } from './script-voter.js';

/**
 * A ScriptVoter on an {@link AdmittedClient} whose client may send a lock command on a connection
 * that was not checked yet (node-redis replays its offline queue on a new connection before it
 * says 'ready'; GLIDE reconnects without a word): the adapter throws ServerChangedError for such a
 * grant, and the voter lets go of it there and votes again once the new connection was checked
 * (the identity guard may then make it abstain).
 */
export class AdmittedVoter<C extends AdmittedClient> extends ScriptVoter<C> {
  override acquire(
    keys: readonly string[],
    value: string,
    ttlMs: number,
    ticket: string,
    seedUs?: number,
  ): Promise<AcquireVote> {
    return super.acquire(keys, value, ttlMs, ticket, seedUs).catch((err: unknown) => {
      if (!(err instanceof ServerChangedError)) throw err;
      return this.letGo(keys, value, RELEASE)
        .catch(() => undefined)
        .then(() => this.adapter.whenChecked())
        .then(() => super.acquire(keys, value, ttlMs, ticket, seedUs));
    });
  }
}
