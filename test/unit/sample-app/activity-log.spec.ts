import { ActivityLog } from '../../../sample-app/src/dashboard/activity-log.js';

describe('dashboard ActivityLog', () => {
  test('a grant makes this instance the holder with its token; the release keeps it as the last', () => {
    const log = new ActivityLog('A');
    log.record({ type: 'acquired', resources: ['account:alice'], fencingToken: 7, durationMs: 3.4 });
    expect(log.view('alice')).toMatchObject({ held: true, holder: 'A', fencingToken: 7 });
    log.record({ type: 'released', resources: ['account:alice'], fencingToken: 7, durationMs: 20 });
    expect(log.view('alice')).toMatchObject({ held: false, holder: null, lastHolder: 'A', fencingToken: 7 });
    expect(log.counts).toEqual({ granted: 1, refused: 0, staleRejected: 0 });
    expect(log.recent.map((e) => e.kind)).toEqual(['released', 'granted']);
  });

  test('a lock held elsewhere comes from inspect(): another instance, with the majority token', () => {
    const log = new ActivityLog('A');
    log.record({ type: 'busy', resources: ['account:bob'], durationMs: 5000 });
    log.inspected('bob', { held: true, ttlMs: 1500, fencingToken: 12 });
    expect(log.view('bob')).toMatchObject({
      held: true,
      holder: 'another instance',
      lastHolder: 'another instance',
      fencingToken: 12,
      ttlMs: 1500,
    });
    expect(log.counts.refused).toBe(1);
  });

  test('stale writes are counted and listed; other locks and node events are not', () => {
    const log = new ActivityLog('A', 2);
    expect(log.record({ type: 'acquired', resources: ['settlement'], fencingToken: 1 })).toBeNull();
    expect(log.record({ type: 'node-down', resources: [], node: 'n1' })).toBeNull();
    log.record({ type: 'stale-rejected', account: 'carol', fencingToken: 3, stage: 'write' });
    log.record({ type: 'unavailable', resources: ['account:carol'] });
    log.record({ type: 'lost', resources: ['account:carol'], fencingToken: 3, reason: 'expired' });
    expect(log.counts).toEqual({ granted: 0, refused: 1, staleRejected: 1 });
    expect(log.recent.map((e) => e.kind)).toEqual(['lost', 'unavailable']); // the last 2 only
  });
});
