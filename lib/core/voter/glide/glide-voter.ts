import { RELEASE, type AcquireVote } from '../../scripts/index.js';
import { ScriptVoter } from '../script-voter.js';
import type { VoterContext } from '../voter.js';
import { GlideScriptClient, ServerChangedError, type GlideClientApi } from './glide-client.js';

/**
 * One Redis / Valkey server reached with a Valkey GLIDE 2 `GlideClient` the application created,
 * as a Voter: the lock operations of ScriptVoter on a {@link GlideScriptClient}.
 */
export class GlideVoter extends ScriptVoter<GlideScriptClient> {
  /** A voter for a `GlideClient` (never closed by the engine). */
  static from(client: object, context: VoterContext): GlideVoter {
    return new GlideVoter(new GlideScriptClient(client, context), context);
  }

  /**
   * An acquire that ran on another server than the one admitted (GLIDE reconnected unseen) is let
   * go of there, and the vote is the one of the server as the identity guard then finds it.
   */
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

  /** The client that runs the scripts (the application's). */
  get client(): GlideClientApi {
    return this.adapter.client;
  }
}
