/**
 * The masters of a cluster and the slots each serves (`host:port` -> slots), from a CLUSTER SLOTS
 * reply (`[[start, end, [host, port, id, ...], ...replicas], ...]`).
 */
export function parseClusterSlots(reply: unknown): Map<string, number[]> {
  const shards = new Map<string, number[]>();
  if (!Array.isArray(reply)) throw new Error(`CLUSTER SLOTS answered ${String(reply)}`);
  for (const range of reply as unknown[]) {
    if (!Array.isArray(range) || range.length < 3 || !Array.isArray(range[2])) continue;
    const [start, end, master] = range as [unknown, unknown, unknown[]];
    const address = `${String(master[0])}:${String(master[1])}`;
    const slots = shards.get(address) ?? [];
    for (let slot = Number(start); slot <= Number(end); slot++) slots.push(slot);
    shards.set(address, slots);
  }
  return shards;
}
