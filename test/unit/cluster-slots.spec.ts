import { Redlock } from '../../lib/core/engine/redlock.js';
import { CrossSlotLockError } from '../../lib/core/errors.js';
import { ACQUIRE } from '../../lib/core/scripts/acquire.js';
import { keySlot, SLOT_COUNT, slotMarkerKey } from '../../lib/core/scripts/keys.js';
import { LET_GO } from '../../lib/core/scripts/let-go.js';
import { clusterLabel } from '../../lib/core/transport/ioredis/open.js';

describe('cluster slots', () => {
  it('computes the slot Redis computes (values read from CLUSTER KEYSLOT of redis-server 7.0)', () => {
    expect([keySlot('a'), keySlot('b'), keySlot('c'), keySlot('n')]).toEqual([15495, 3300, 7365, 3432]);
    // Only the text between the first { and the next } is hashed, when it is not empty.
    expect(keySlot('x{a}y')).toBe(15495);
    expect(keySlot('foo{}{a}')).toBe(keySlot('foo{}{a}')); // empty tag: the whole key
    expect(keySlot('foo{}{a}')).not.toBe(15495);
    expect(keySlot('lock:{{order:1}:a}')).toBe(keySlot('lock:{{order:1}:b}'));
    expect(keySlot('lock:{{order:1}:a}')).toBe(keySlot('{order:1'));
  });

  it('has a marker key in every slot', () => {
    const marker = 'redlock:__restart_guard__';
    const misplaced: number[] = [];
    for (let slot = 0; slot < SLOT_COUNT; slot++)
      if (keySlot(slotMarkerKey(marker, slot)) !== slot) misplaced.push(slot);
    expect(misplaced).toEqual([]);
    expect(slotMarkerKey(marker, 0).length).toBeLessThanOrEqual(marker.length + 6);
  });

  it('refuses keys in different slots before any command, naming the resources and the fix', async () => {
    // Nothing listens on port 1: the refusal comes from the keys alone, before any connection.
    const engine = new Redlock({
      nodes: [{ cluster: [{ host: '127.0.0.1', port: 1 }], options: { lazyConnect: true } }],
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    try {
      const refused = engine.acquire(['a', 'b'], { wait: 0 });
      await expect(refused).rejects.toThrow(CrossSlotLockError);
      await expect(refused).rejects.toThrow(/"a", "b".*cluster:\/\/127\.0\.0\.1:1.*common hash tag/);
    } finally {
      await engine.close();
    }
  });

  it('labels a cluster by its startup nodes, never with a password', () => {
    expect(clusterLabel([{ host: '10.0.0.1', port: 7000 }, 7001, 'redis://u:secret@10.0.0.3:7002'])).toBe(
      'cluster://10.0.0.1:7000,localhost:7001,10.0.0.3:7002',
    );
  });
});

describe('one build of each script for a single server and a Cluster', () => {
  it('takes every key from KEYS: the marker is the last declared key, counters and queues declared', () => {
    for (const script of [ACQUIRE, LET_GO]) {
      expect(script.source).not.toContain('__restart_guard__');
      // No key name is derived inside the script (a proxy or a Cluster routes by the declared keys).
      expect(script.source).not.toMatch(/\.\. ':(fence|queue|readers)'/);
    }
    expect(ACQUIRE.source).toContain('KEYS[#KEYS]');
    expect(ACQUIRE.source).toContain('local n = (#KEYS - 1) / 3');
  });
});
