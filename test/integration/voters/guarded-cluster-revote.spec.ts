import {
  CLUSTER_SCRIPTS,
  decodeAcquireReply,
  runScript,
  type LuaScript,
} from '../../../lib/core/scripts/index.js';
import { ServerChangedError } from '../../../lib/core/voter/admitted-client.js';
import type { ShardServer } from '../../../lib/core/voter/cluster-preflight.js';
import { GuardedClusterClient } from '../../../lib/core/voter/guarded-cluster-client.js';
import { slotMarkerKey } from '../../../lib/core/voter/ioredis-cluster/slots.js';
import type { ServerCommands } from '../../../lib/core/voter/server-commands.js';
import { ScriptVoter } from '../../../lib/core/voter/script-voter.js';
import type { VoterContext } from '../../../lib/core/voter/voter.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { DEFAULT_SETTINGS, PREFIX, voterContext } from '../../conformance/harness.js';

/*
 * The identity guard of node-redis and GLIDE cluster voters (voter/guarded-cluster-client.ts,
 * voter/master-identities.ts) after a master's server changed:
 * - a call that waited for the master's check, which found the server changed: the voter read the
 *   master's abstention before it called (ScriptVoter), so the call must not run on; it rejects
 *   with ServerChangedError, and AdmittedVoter votes again (and abstains). Without that, the call
 *   ran on the changed server, whose restart-guard markers came with its data (AOF), and its grant
 *   counted;
 * - a client that saw the run_id change abstains for the guard even when the identity script says
 *   "same server, nothing left" (other clients updated the record and reset the marker first).
 *
 * One real redis-server (AOF everysec, so a crash keeps the markers) stands for a cluster of one
 * master that serves every slot; the adapter routes every call to it. Only the cluster's slot map
 * is the test's.
 */

const GUARD_MS = 3000;
const ALL_SLOTS = Array.from({ length: 16384 }, (_, slot) => slot);

/** A GuardedClusterClient over one real server that serves every slot. */
class OneMasterCluster extends GuardedClusterClient {
  readonly label = 'cluster://one-master';

  constructor(
    private readonly nodes: RedisNodes,
    context: VoterContext,
  ) {
    super(context);
  }

  /** The cluster "connects": scripts loaded, and the masters surveyed (as on a real connection). */
  connect(): void {
    this.recordReady();
  }

  /** The adapter's probe: reads the masters' run_ids now. */
  probe(): Promise<void> {
    return this.surveyMasters();
  }

  private get address(): string {
    return `127.0.0.1:${this.nodes.port(0)}`;
  }

  masters(): Promise<ReadonlyMap<string, readonly number[]>> {
    return Promise.resolve(new Map([[this.address, ALL_SLOTS]]));
  }

  serverOf(): ServerCommands {
    const client = this.nodes.client(0);
    return {
      info: (section) => client.info(section),
      configGet: (parameter) => client.config('GET', parameter),
      runScript: (script, keys, args) => runScript(client, script, keys, args),
      username: undefined,
    };
  }

  protected runRouted(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    return runScript(this.nodes.client(0), script, keys, args);
  }

  protected get transportUp(): boolean {
    return true;
  }
  protected waitTransport(): Promise<boolean> {
    return Promise.resolve(true);
  }
  protected shardServers(): readonly ShardServer[] {
    return [];
  }
  ping(): Promise<void> {
    return this.nodes
      .client(0)
      .ping()
      .then(() => undefined);
  }
  subscribe(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  protected loadScripts(): void {}
  protected seedMarkers(): Promise<void> {
    return Promise.resolve();
  }
  protected slotsByShard(): ReadonlyMap<string, readonly number[]> {
    return new Map([[this.address, ALL_SLOTS]]);
  }
  protected runOnShard(script: LuaScript, _routeKey: string, args: readonly string[]): Promise<unknown> {
    return runScript(this.nodes.client(0), script, [], args);
  }
}

describe('cluster identity guard of node-redis and GLIDE cluster voters, on a real server', () => {
  let nodes: RedisNodes;
  beforeAll(async () => {
    nodes = await RedisNodes.start(1, { persistence: 'aof-everysec' });
  });
  afterAll(() => nodes?.close());

  test('a call that waited for a check that found the server changed rejects with ServerChangedError instead of granting', async () => {
    const context = voterContext({ ...DEFAULT_SETTINGS, guardMs: GUARD_MS });
    const adapter = new OneMasterCluster(nodes, context);
    const voter = new ScriptVoter(adapter, context);
    const lockKey = (name: string) => `${PREFIX}{${name}}`;
    // The markers of the lock keys' slots, and of slot 0 (the identity check's), say "in service
    // for long", as slot-markers.ts seeds them.
    const markerKeys = ['first', 'before', 'waited', 'after', '']
      .map((name) => (name ? adapter.keySlot(lockKey(name)) : 0))
      .map((slot) => slotMarkerKey(context.settings.guardKey, slot));
    await nodes.client(0).mset(Object.fromEntries(markerKeys.map((key) => [key, '0'])));

    adapter.connect();
    await adapter.whenChecked();
    expect(adapter.abstainingForMs([lockKey('first')])).toBe(0);
    expect(await voter.acquire([lockKey('first')], 'v1', 10_000, '')).toMatchObject({ kind: 'granted' });

    // A crash: another server process answers at the address, with the data (and markers) of the one before.
    await nodes.restart(0);
    await nodes.client(0).ping();

    // The first acquire after it runs on the new server (nothing told the guard yet); the run_id
    // read right behind it is not the one checked: no vote, and a survey starts.
    await expect(voter.acquire([lockKey('before')], 'v2', 10_000, '')).rejects.toBeInstanceOf(
      ServerChangedError,
    );

    // A call made now, before the survey's check ends (the voter read no abstention: the master is
    // not abstaining yet), waits for the check. The check finds the server changed.
    const keys = [lockKey('waited')];
    expect(adapter.abstainingForMs(keys)).toBe(0);
    const marker = adapter.markerKey(keys);
    const waited = adapter.run(
      CLUSTER_SCRIPTS.acquire,
      context.calls.acquireKeys(context.calls.keys(keys), marker),
      context.calls.acquireArgs('v3', 10_000, ''),
      decodeAcquireReply,
    );
    await expect(waited).rejects.toBeInstanceOf(ServerChangedError);
    expect(adapter.abstainingForMs(keys)).toBeGreaterThan(GUARD_MS - 1000);
    // It did not run: the changed server holds no lock for it.
    expect(await nodes.client(0).exists(keys[0]!)).toBe(0);

    // A vote from now on (AdmittedVoter's vote again too): an abstention, nothing sent.
    expect(await voter.acquire([lockKey('after')], 'v4', 10_000, '')).toMatchObject({ kind: 'abstaining' });
    expect(await nodes.client(0).exists(lockKey('after'))).toBe(0);
  });

  test('a client that saw its master change abstains for the guard, also when another client already updated the record', async () => {
    const context = voterContext({ ...DEFAULT_SETTINGS, guardMs: GUARD_MS });
    const adapter = new OneMasterCluster(nodes, context);
    const voter = new ScriptVoter(adapter, context);
    const key = `${PREFIX}{converted}`;
    const identitySlotMarker = slotMarkerKey(context.settings.guardKey, 0);
    const admin = nodes.client(0);
    await admin.mset({ [identitySlotMarker]: '0', [adapter.markerKey([key])]: '0' });
    await admin.del(`${identitySlotMarker}:id`);
    adapter.connect();
    await adapter.whenChecked();
    expect(adapter.abstainingForMs([key])).toBe(0);

    await nodes.restart(0);
    const runId = /run_id:(\w+)/.exec(await admin.info('server'))![1]!;
    // What other clients leave behind: one checked the new server first and wrote its run_id in
    // the record (its marker push then undone by a client with the guard off, which seeds '0').
    await admin.mset({ [`${identitySlotMarker}:id`]: `${runId} 0`, [identitySlotMarker]: '0' });

    // The script says "same server, nothing left"; this client checked another run_id before.
    await adapter.probe();
    expect(adapter.abstainingForMs([key])).toBeGreaterThan(GUARD_MS - 500);
    expect(await voter.acquire([key], 'v1', 10_000, '')).toMatchObject({ kind: 'abstaining' });
    expect(await admin.exists(key)).toBe(0);
  });
});
