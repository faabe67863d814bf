import type { Cluster } from 'ioredis';
import { SEED_SLOT_MARKERS } from '../../scripts/seed-slot-markers.js';
import { runScript, type LuaScript } from '../../scripts/lua-script.js';
import { slotMarkerKey } from './slots.js';

/** Slots whose restart-guard markers one seeding call covers. */
const SEED_CHUNK = 256;

/**
 * Runs SEED_SLOT_MARKERS (keyless: the markers travel as arguments) on `shard`, the shard that
 * serves the slots of `markers` (a client that routes by key sends it by `markers[0]`); resolves
 * false when that shard is gone.
 */
export type RunOnShard = (
  shard: string,
  script: LuaScript,
  markers: readonly string[],
  args: readonly string[],
) => Promise<boolean>;

/**
 * Seeds the restart-guard markers of every slot (a cluster voter does it once, when it first
 * connects), with SEED_SLOT_MARKERS on the shard that serves them, a chunk of slots per call: a
 * short script, so lock traffic goes on in between. A shard that fails to seed (it is down) gets
 * its markers from the first acquire on each slot instead, which is as safe: it only starts the
 * guard later. `slotsByShard`: each shard's slots (CLUSTER SLOTS, or the client's slot map);
 * `guardKey` is `<prefix>__restart_guard__`; `guardMs` 0 = guard off. Shared by every cluster
 * client (ioredis, node-redis, Valkey GLIDE): only `run` differs.
 */
export async function seedMarkersByShard(
  slotsByShard: ReadonlyMap<string, readonly number[]>,
  guardKey: string,
  guardMs: number,
  run: RunOnShard,
  /** Says when to stop (the voter closes): checked before each chunk. */
  stopped: () => boolean = () => false,
): Promise<void> {
  const guard = String(guardMs);
  await Promise.all(
    [...slotsByShard].map(async ([shard, slots]) => {
      const markers = slots.map((slot) => slotMarkerKey(guardKey, slot));
      for (let from = 0; from < markers.length && !stopped(); from += SEED_CHUNK) {
        const chunk = markers.slice(from, from + SEED_CHUNK);
        // A failed chunk ends the shard's seeding: the next would fail the same way (the shard is
        // down, or says CLUSTERDOWN), and each failure is one more error reply to log (GLIDE logs
        // each at WARN); its slots' markers come from their first acquires instead.
        const ok = await run(shard, SEED_SLOT_MARKERS, chunk, [guard, ...chunk]).catch(() => false);
        if (!ok) return;
      }
    }),
  );
}

/** The slots each master of an ioredis `client` serves, by its address (`host:port`), from its slot map. */
export function slotsByMaster(client: Cluster): Map<string, number[]> {
  const bySlotOwner = new Map<string, number[]>();
  client.slots.forEach((owners, slot) => {
    const master = owners[0];
    if (master === undefined) return;
    const slots = bySlotOwner.get(master) ?? [];
    slots.push(slot);
    bySlotOwner.set(master, slots);
  });
  return bySlotOwner;
}

/**
 * Seeds the markers of `client`'s cluster (ioredis: its slot map, a call on each master node),
 * until `stopped` says so.
 */
export async function seedSlotMarkers(
  client: Cluster,
  guardKey: string,
  guardMs: number,
  stopped?: () => boolean,
): Promise<void> {
  const bySlotOwner = slotsByMaster(client);
  const nodes = new Map(
    client.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]),
  );
  const byNode = new Map<string, number[]>();
  for (const [owner, slots] of bySlotOwner) if (nodes.has(owner)) byNode.set(owner, slots);
  await seedMarkersByShard(
    byNode,
    guardKey,
    guardMs,
    async (shard, script, _markers, args) => {
      const target = nodes.get(shard);
      if (!target || target.status === 'end') return false;
      await runScript(target, script, [], args);
      return true;
    },
    stopped,
  );
}
