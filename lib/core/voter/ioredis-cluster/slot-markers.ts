import type { Cluster } from 'ioredis';
import { SEED_SLOT_MARKERS } from '../../scripts/seed-slot-markers.js';
import { runScript } from '../../scripts/lua-script.js';
import { slotMarkerKey } from './slots.js';

/** Slots whose restart-guard markers one seeding call covers. */
const SEED_CHUNK = 256;

/**
 * Seeds the restart-guard markers of every slot of `client`'s cluster (a cluster voter does it
 * once, when it first connects), with SEED_SLOT_MARKERS on the shard that serves them, a chunk of
 * slots per call: a short script, so lock traffic goes on in between. A shard that fails to seed
 * (it is down) gets its markers from the first acquire on each slot instead, which is as safe: it
 * only starts the guard later. `guardKey` is `<prefix>__restart_guard__`; `guardMs` 0 = guard off.
 */
export async function seedSlotMarkers(client: Cluster, guardKey: string, guardMs: number): Promise<void> {
  const guard = String(guardMs);
  const bySlotOwner = new Map<string, string[]>();
  client.slots.forEach((owners, slot) => {
    const master = owners[0];
    if (master === undefined) return;
    const markers = bySlotOwner.get(master) ?? [];
    markers.push(slotMarkerKey(guardKey, slot));
    bySlotOwner.set(master, markers);
  });
  await Promise.all(
    client.nodes('master').map(async (node) => {
      const markers = bySlotOwner.get(`${node.options.host}:${node.options.port}`) ?? [];
      for (let from = 0; from < markers.length && node.status !== 'end'; from += SEED_CHUNK) {
        const chunk = markers.slice(from, from + SEED_CHUNK);
        await runScript(node, SEED_SLOT_MARKERS, [], [guard, ...chunk]).catch(() => undefined);
      }
    }),
  );
}
