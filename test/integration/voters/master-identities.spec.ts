import { runScript } from '../../../lib/core/scripts/index.js';
import { keySlot } from '../../../lib/core/voter/ioredis-cluster/slots.js';
import { MasterIdentities, type ClusterMasters } from '../../../lib/core/voter/master-identities.js';
import type { ServerCommands } from '../../../lib/core/voter/server-commands.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';

/*
 * The identity guard of node-redis and GLIDE cluster voters (voter/master-identities.ts) when a
 * survey of the masters comes back with slots that no master serves, as CLUSTER SLOTS does while
 * a cluster restarts. The guard's checks run on a real redis-server (its run_id, its identity
 * script); only the slot map is the test's: half of the slots, then all of them.
 */

/** A key whose slot is in [from, to). */
function keyInSlots(from: number, to: number): string {
  for (let i = 0; ; i++) {
    const key = `redlock:{k${i}}`;
    const slot = keySlot(key);
    if (slot >= from && slot < to) return key;
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('cluster identity guard: slots without a known master', () => {
  let nodes: RedisNodes;
  beforeAll(async () => {
    nodes = await RedisNodes.start(1);
  });
  afterAll(() => nodes?.close());

  test('a key whose slot no master serves in the latest survey does not count until one does', async () => {
    const client = nodes.client(0);
    const server: ServerCommands = {
      info: (section) => client.info(section),
      configGet: (parameter) => client.config('GET', parameter),
      runScript: (script, keys, args) => runScript(client, script, keys, args),
      username: undefined,
    };
    const address = `127.0.0.1:${nodes.port(0)}`;
    let slots = range(0, 8192);
    const cluster: ClusterMasters = {
      masters: () => Promise.resolve(new Map([[address, slots]])),
      serverOf: () => server,
    };
    const identities = new MasterIdentities(
      () => 'cluster://test',
      {
        preflight: undefined,
        guardMs: 1000,
        markerKey: 'redlock:__restart_guard__',
        timeoutMs: 2000,
        logger: new MemoryLogger(),
      },
      cluster,
      () => undefined,
    );
    const served = keyInSlots(0, 8192);
    const unserved = keyInSlots(8192, 16384);

    await identities.survey();
    expect(identities.uncheckedFor([served])).toBeUndefined();
    expect(identities.uncheckedFor([unserved])).toMatch(
      /^slot \d+: no master known for it; surveying the cluster$/,
    );
    // Keyless calls (a survey's own scripts) are not held back.
    expect(identities.uncheckedFor([])).toBeUndefined();

    slots = range(0, 16384);
    await identities.survey();
    expect(identities.uncheckedFor([unserved])).toBeUndefined();
    expect(identities.checkedRunId(unserved)).toMatch(/^[0-9a-f]{40}$/);
  });
});
