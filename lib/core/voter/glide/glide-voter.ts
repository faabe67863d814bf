import { AdmittedVoter } from '../admitted-voter.js';
import type { VoterContext } from '../voter.js';
import { GlideScriptClient, type GlideClientApi } from './glide-client.js';

/**
 * One Redis / Valkey server reached with a Valkey GLIDE 2 `GlideClient` the application created,
 * as a Voter: the lock operations of ScriptVoter on a {@link GlideScriptClient} (AdmittedVoter:
 * a grant on a server that changed unseen is let go of, and voted again once checked).
 */
export class GlideVoter extends AdmittedVoter<GlideScriptClient> {
  /** A voter for a `GlideClient` (never closed by the engine). */
  static from(client: object, context: VoterContext): GlideVoter {
    return new GlideVoter(new GlideScriptClient(client, context), context);
  }

  /** The client that runs the scripts (the application's). */
  get client(): GlideClientApi {
    return this.adapter.client;
  }
}
