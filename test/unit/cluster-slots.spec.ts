import { luaString } from '../../lib/core/scripts/lua-script.js';
import { clusterAcquireScript } from '../../lib/core/scripts/cluster-scripts.js';
import { engineScripts, type ScriptSettings } from '../../lib/core/scripts/index.js';
import {
  assertOneSlot,
  CrossSlotLockError,
  keySlot,
  SLOT_COUNT,
  slotMarkerKey,
  slotTag,
} from '../../lib/core/voter/ioredis-cluster/slots.js';
import { clusterLabel } from '../../lib/core/voter/ioredis-cluster/connection.js';

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
    expect(slotTag(0).length).toBeLessThanOrEqual(4);
  });

  it('refuses keys in different slots, naming the resources and the fix', () => {
    expect(assertOneSlot(['{o}:a', '{o}:b'], ['p:{{o}:a}', 'p:{{o}:b}'], 'cluster://h:1')).toBe(
      keySlot('{o'),
    );
    const refuse = () => assertOneSlot(['a', 'b'], ['p:{a}', 'p:{b}'], 'cluster://h:1');
    expect(refuse).toThrow(CrossSlotLockError);
    expect(refuse).toThrow(/"a", "b".*cluster:\/\/h:1.*common hash tag/);
  });

  it('labels a cluster by its startup nodes, never with a password', () => {
    expect(clusterLabel([{ host: '10.0.0.1', port: 7000 }, 7001, 'redis://u:secret@10.0.0.3:7002'])).toBe(
      'cluster://10.0.0.1:7000,localhost:7001,10.0.0.3:7002',
    );
  });
});

describe('the cluster acquire script', () => {
  const settings: ScriptSettings & { seedWindowMs: number } = {
    guardMs: 60_000,
    guardKey: 'redlock:__restart_guard__',
    fenceIdleMs: 1000,
    turnMs: 200,
    queueIdleMs: 10_000,
    seedWindowMs: 100,
  };

  it('takes the marker as its last key and leaves the single-server script as it was', () => {
    const single = engineScripts(settings).acquire.source;
    const cluster = clusterAcquireScript(settings).source;
    expect(single).toContain(luaString(settings.guardKey));
    expect(cluster).not.toContain(luaString(settings.guardKey));
    expect(cluster).toContain('KEYS[#KEYS]');
    expect(cluster).toContain('local n = #KEYS - 1');
    // Nothing else differs.
    expect(
      cluster.replaceAll('KEYS[#KEYS]', luaString(settings.guardKey)).replace('#KEYS - 1', '#KEYS'),
    ).toBe(single);
  });

  it('is built with the guard off too (the marker is then only written)', () => {
    expect(clusterAcquireScript({ ...settings, guardMs: 0 }).source).toContain(
      "redis.call('SET', KEYS[#KEYS], '0')",
    );
  });
});
