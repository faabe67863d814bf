import { assertClusterPrefix } from '../ioredis-cluster/slots.js';
import { AdmittedVoter } from '../admitted-voter.js';
import type { VoterContext } from '../voter.js';
import { GlideClusterScriptClient, type GlideClusterApi } from './cluster-client.js';

/**
 * A Redis / Valkey Cluster reached with a Valkey GLIDE 2 `GlideClusterClient` the application
 * created, as ONE voter of the quorum: the lock operations of ScriptVoter on a
 * {@link GlideClusterScriptClient}. The mapping of the algorithm onto a cluster (one hash tag per
 * lock, a restart-guard marker per slot, CrossSlotLockError, wake-ups on every master) is the
 * ioredis Cluster voter's (../ioredis-cluster/cluster-voter.ts). Never closed by the engine.
 */
export class GlideClusterVoter extends AdmittedVoter<GlideClusterScriptClient> {
  /** A voter for a `GlideClusterClient`. */
  static from(client: object, context: VoterContext, option = 'a nodes entry'): GlideClusterVoter {
    assertClusterPrefix(context.settings.guardKey, option);
    return new GlideClusterVoter(new GlideClusterScriptClient(client, context), context);
  }

  /** The client that runs the scripts (the application's). */
  get client(): GlideClusterApi {
    return this.adapter.client;
  }
}
