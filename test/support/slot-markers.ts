import * as ioredis from 'ioredis';
import { realRuntime } from '../../lib/core/runtime.js';
import { IoredisTransport, type IoredisModule } from '../../lib/core/transport/ioredis/ioredis.js';
import { seedSlotMarkers } from '../../lib/core/voter/batches.js';
import type { RedisClusterNodes } from '../../lib/testing/index.js';

/**
 * Every slot's restart-guard marker `guardKey` in place with the guard off, as a first voter with
 * the guard off seeds them (a cluster in service): only what a test does then makes a shard abstain.
 */
export async function seedClusterMarkers(cluster: RedisClusterNodes, guardKey: string): Promise<void> {
  const client = cluster.client();
  try {
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    const io = ioredis as unknown as IoredisModule;
    const transport = new IoredisTransport(
      { client: client as unknown as ioredis.Cluster, label: 'seed', owned: false },
      realRuntime,
      io,
      2000,
    );
    await seedSlotMarkers(transport, guardKey, 0, () => false);
    await transport.close(1000);
  } finally {
    client.disconnect();
  }
}
