import { CLUSTER_SCRIPTS, SCRIPTS, ScriptCalls, type ScriptSettings } from '../../lib/core/scripts/index.js';
import {
  assertOneSlot,
  CrossSlotLockError,
  keySlot,
  SLOT_COUNT,
  slotMarkerKey,
  slotTag,
} from '../../lib/core/voter/ioredis-cluster/slots.js';
import { clusterLabel } from '../../lib/core/voter/ioredis-cluster/connection.js';
import { parseClusterSlots } from '../../lib/core/voter/glide-cluster/cluster-slots.js';

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

  it('declares every key: the marker is its last declared key, never a literal', () => {
    const source = CLUSTER_SCRIPTS.acquire.source;
    expect(source).not.toContain(settings.guardKey);
    expect(source).toContain('local marker = KEYS[#KEYS]');
    expect(source).toContain('local n = (#KEYS - 1) / 3');
    // The single-server script derives the counters and queues (key-layout.ts): not for a cluster.
    expect(source).not.toContain(":fence'");
    expect(SCRIPTS.acquire.source).toContain(":fence'");
    expect(CLUSTER_SCRIPTS.acquire.sha).not.toBe(SCRIPTS.acquire.sha);
  });

  it('declares every key it touches in the lock keys slot, the slot marker included', () => {
    const lockKeys = ['redlock:{order:42}:items', 'redlock:{order:42}:payment'];
    const slot = assertOneSlot(lockKeys, lockKeys, 'cluster://h:1');
    const calls = new ScriptCalls(settings);
    const keys = calls.acquireKeys(calls.keys(lockKeys), slotMarkerKey(settings.guardKey, slot));
    expect(keys).toEqual([
      ...lockKeys,
      ...lockKeys.map((k) => `${k}:fence`),
      ...lockKeys.map((k) => `${k}:queue`),
      slotMarkerKey(settings.guardKey, slot),
    ]);
    expect(new Set(keys.map(keySlot))).toEqual(new Set([slot]));
  });

  it('is the same with the guard off: the guard travels in the settings argument', () => {
    const off = new ScriptCalls({ ...settings, guardMs: 0 });
    expect(off.acquireArgs('v', 1000, '')[1]).toBe('0 1000 100 10000');
    expect(new ScriptCalls(settings).acquireArgs('v', 1000, '')[1]).toBe('60000 1000 100 10000');
  });

  it('reads the masters and their slots from a CLUSTER SLOTS reply (as GLIDE decodes it)', () => {
    const reply = [
      [0, 2, ['127.0.0.1', 7000, 'id-a'], ['127.0.0.1', 7003, 'id-r']],
      [3, 3, ['127.0.0.1', 7001, 'id-b']],
      [4, 5, ['127.0.0.1', 7000, 'id-a']],
      'junk',
    ];
    expect(parseClusterSlots(reply)).toEqual(
      new Map([
        ['127.0.0.1:7000', [0, 1, 2, 4, 5]],
        ['127.0.0.1:7001', [3]],
      ]),
    );
    expect(() => parseClusterSlots('ERR')).toThrow(/CLUSTER SLOTS answered ERR/);
  });
});
