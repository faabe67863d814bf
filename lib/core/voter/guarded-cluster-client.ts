import { CLUSTER_SCRIPTS, isLetGo, type LuaScript } from '../scripts/index.js';
import { RUN_ID } from '../scripts/identity.js';
import { ServerChangedError } from './admitted-client.js';
import { ClusterScriptClient } from './cluster-script-client.js';
import { MasterIdentities, type ClusterMasters } from './master-identities.js';
import type { ServerCommands } from './server-commands.js';
import type { VoterContext } from './voter.js';

/**
 * A {@link ClusterScriptClient} with the identity guard per master of a client that does not say
 * when it reconnects or which server a connection reached (node-redis `createCluster`, Valkey GLIDE
 * `GlideClusterClient`): master-identities.ts. The masters are surveyed each time the cluster
 * connects and on every {@link surveyMasters} (the adapter's probe), and RUN_ID goes right behind
 * every acquire, routed by the same key (same master, same connection, same round trip): a grant
 * counts only when it ran on the server checked for its slot. Cost: one small extra script call
 * per acquire, pipelined. The adapter supplies the masters and commands routed to one of them.
 */
export abstract class GuardedClusterClient extends ClusterScriptClient implements ClusterMasters {
  private readonly identities: MasterIdentities;
  private readonly abstentionListeners: Array<(forMs: number, why: string) => void> = [];

  constructor(context: VoterContext) {
    super(context);
    this.identities = new MasterIdentities(
      () => this.label,
      {
        preflight: undefined,
        guardMs: context.settings.guardMs,
        markerKey: context.settings.guardKey,
        timeoutMs: Math.max(context.connectTimeout, 1000),
        logger: context.logger,
      },
      this,
      (forMs, why) => {
        for (const listener of this.abstentionListeners) listener(forMs, why);
      },
    );
  }

  abstract masters(): Promise<ReadonlyMap<string, readonly number[]>>;
  abstract serverOf(address: string, timeoutMs: number): ServerCommands;
  /** Runs a script routed by the slot of `routeKey` (a keyless one too), bounded by nodeTimeout. */
  protected abstract runRouted(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    routeKey: string | undefined,
  ): Promise<unknown>;

  /** Preflight's review in flight and the masters' checks in flight: an acquire waits for them. */
  override get checking(): Promise<void> | undefined {
    const review = super.checking;
    const identities = this.identities.checking;
    if (!review) return identities;
    return identities ? Promise.all([review, identities]).then(() => undefined) : review;
  }

  /** Resolves once the checks in flight ended (a voter votes again after a ServerChangedError). */
  whenChecked(): Promise<void> {
    return this.checking ?? Promise.resolve();
  }

  /** The identity guard of the master that serves `lockKeys`' slot. */
  abstainingForMs(lockKeys: readonly string[]): number {
    return this.identities.abstainingForMs(lockKeys);
  }

  onAbstention(listener: (forMs: number, why: string) => void): void {
    this.abstentionListeners.push(listener);
  }

  /**
   * Stops the identity guard's surveys and retries, and waits for the one in flight, at most
   * `timeoutMs` (the adapter's close calls it first).
   */
  protected stopGuard(timeoutMs: number): Promise<void> {
    return this.identities.close(timeoutMs);
  }

  /** Reads the masters' run_ids now (the adapter's probe); never rejects. */
  protected surveyMasters(): Promise<void> {
    return this.identities.survey();
  }

  protected override recordReady(): void {
    super.recordReady();
    void this.identities.survey();
  }

  override run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    // A master not checked yet does not vote (a let-go goes anyway: it frees only its caller's value).
    const unchecked = isLetGo(script) ? undefined : this.identities.uncheckedFor(keys);
    if (unchecked === undefined) return super.run(script, keys, args, decode);
    // A check in flight is waited for (bounded by the engine's rounds), or one started now (the
    // last one failed, e.g. a restarted cluster still said CLUSTERDOWN).
    const checking = this.identities.checking ?? this.identities.survey();
    return checking.then(() => {
      const still = this.identities.uncheckedFor(keys);
      if (still !== undefined) return Promise.reject(new Error(still));
      // The voter read the master's abstention before this wait (ScriptVoter), and the check may
      // have found its server changed: it votes again instead (admitted-voter.ts), and abstains.
      if (this.identities.abstainingForMs(keys) > 0) return Promise.reject(new ServerChangedError());
      return super.run(script, keys, args, decode);
    });
  }

  protected send<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    const routeKey = keys[0];
    const call = this.runRouted(script, keys, args, routeKey);
    if (routeKey === undefined || script !== CLUSTER_SCRIPTS.acquire) return call.then(decode);
    // No run_id to compare (guard off, or INFO denied to the ACL user: the guard is off there).
    if (this.identities.checkedRunId(routeKey) === undefined) return call.then(decode);
    // Right behind the acquire, on the same master's connection: whose server ran it. No answer
    // is no vote (the acquire is let go of by the engine as a failed vote).
    const runId = this.runRouted(RUN_ID, [], [], routeKey);
    return Promise.all([call, runId]).then(([reply, id]) => {
      if (this.identities.confirm(routeKey, id)) return decode(reply);
      throw new ServerChangedError();
    });
  }
}
