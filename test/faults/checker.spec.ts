/** The history checker must see each kind of violation (synthetic histories, no Redis needed). */
import { check, parseHistory, pausedWrites, type History } from './checker.js';

const ns = (ms: number) => String(BigInt(Math.round(ms * 1e6)) + 1_000_000_000_000n);

/** Builds a history from compact events: [ms, ev, fields]. */
function history(worker: string, events: Array<[number, string, Record<string, unknown>?]>): History {
  const lines = events.map(([t, ev, fields = {}]) => {
    const out: Record<string, unknown> = { ev, t: ns(t), ...fields };
    if (typeof out.validityEnd === 'number') out.validityEnd = ns(out.validityEnd);
    if (typeof out.tq === 'number') out.tq = ns(out.tq);
    return JSON.stringify(out);
  });
  return parseHistory(`${lines.join('\n')}\n{"ev":"trunc`, worker);
}

/** One complete iteration: request, grant, fenced read and write, release. */
function hold(
  i: number,
  from: number,
  to: number,
  token: number,
  opts: { validity?: number; value?: number; writeOk?: boolean; resource?: string } = {},
): Array<[number, string, Record<string, unknown>?]> {
  const resource = opts.resource ?? 'r';
  const value = opts.value ?? i;
  return [
    [from - 1, 'request', { i, resource, ttl: 1000, wait: 1000 }],
    [from, 'grant', { i, resource, token, validityEnd: opts.validity ?? from + 900 }],
    [from + 0.1, 'read-req', { i, resource, token }],
    [from + 0.2, 'read-ack', { i, resource, token, ok: true, value: value - 1 }],
    [to - 0.2, 'write-req', { i, resource, token, value }],
    [to - 0.1, 'write-ack', { i, resource, token, ok: opts.writeOk ?? true }],
    [to, 'release', { i, resource, validityEnd: opts.validity ?? from + 900 }],
    [to + 0.1, 'released', { i, resource }],
  ];
}

describe('history checker', () => {
  test('a clean serial history passes', () => {
    const a = history('a', [...hold(1, 10, 20, 100, { value: 1 }), ...hold(3, 40, 50, 102, { value: 3 })]);
    const b = history('b', hold(2, 25, 35, 101, { value: 2 }));
    const r = check([a, b], { r: 3 });
    expect(r).toMatchObject({
      grants: 3,
      overlaps: 0,
      tokenOrderViolations: 0,
      duplicateTokens: 0,
      staleWritesAccepted: 0,
      lostUpdates: 0,
      acknowledgedIncrements: 3,
      lateGrants: 0,
      examples: [],
    });
  });

  test('overlapping holds are found; validity end caps a hold that never released', () => {
    const a = history('a', hold(1, 10, 30, 100));
    const b = history('b', hold(1, 20, 40, 101));
    expect(check([a, b], {}).overlaps).toBe(1);
    // A killed holder (no release) holds until its validity end only.
    const dead = history('c', hold(1, 10, 30, 100, { validity: 15 }).slice(0, 2));
    expect(check([dead, b], {}).overlaps).toBe(0);
    expect(check([history('c', hold(1, 10, 30, 100, { validity: 25 }).slice(0, 2)), b], {}).overlaps).toBe(1);
  });

  test('an indeterminate acquire is a possible overlap, not a violation', () => {
    const killed = history('k', [[5, 'request', { i: 1, resource: 'r', ttl: 1000, wait: 0 }]]);
    const b = history('b', hold(1, 20, 40, 101));
    const r = check([killed, b], {});
    expect(r).toMatchObject({ overlaps: 0, possibleOverlaps: 1, indeterminateAcquires: 1 });
  });

  test('token order: a later acquire with a lower token, and a token granted twice', () => {
    const a = history('a', hold(1, 10, 20, 105));
    const b = history('b', hold(1, 30, 40, 104));
    expect(check([a, b], {}).tokenOrderViolations).toBe(1);
    const c = history('c', hold(1, 30, 40, 105));
    const r = check([a, c], {});
    expect(r.duplicateTokens).toBe(1);
    expect(r.tokenOrderViolations).toBe(1);
  });

  test('a write accepted after the store acknowledged a higher token is stale', () => {
    const old = history('old', [
      [0, 'request', { i: 1, resource: 'r', ttl: 1000, wait: 0 }],
      [1, 'grant', { i: 1, resource: 'r', token: 100, validityEnd: 10 }],
      [2, 'read-req', { i: 1, resource: 'r', token: 100 }],
      [3, 'read-ack', { i: 1, resource: 'r', token: 100, ok: true, value: 0 }],
      [50, 'write-req', { i: 1, resource: 'r', token: 100, value: 1 }],
      [51, 'write-ack', { i: 1, resource: 'r', token: 100, ok: true }],
    ]);
    const next = history('next', hold(1, 20, 30, 101, { value: 1 }));
    const r = check([old, next], { r: 1 });
    expect(r.staleWritesAccepted).toBe(1);
    expect(r.lateWrites).toBe(1);
    expect(r.lateWritesAccepted).toBe(1);
    expect(r.lostUpdates).toBe(1); // two acknowledged increments, counter 1
  });

  test('lost updates of an unlocked run; an unacknowledged write widens the bound', () => {
    const rmw = (
      i: number,
      t: number,
      value: number,
      ack = true,
    ): Array<[number, string, Record<string, unknown>?]> => [
      [t, 'read-req', { i, resource: 'c' }],
      [t + 1, 'read-ack', { i, resource: 'c', ok: true, value: value - 1 }],
      [t + 2, 'write-req', { i, resource: 'c', value }],
      ...(ack
        ? [[t + 3, 'write-ack', { i, resource: 'c', ok: true }] as [number, string, Record<string, unknown>]]
        : []),
    ];
    const r = check([history('a', rmw(1, 0, 1)), history('b', rmw(1, 0.5, 1))], { c: 1 });
    expect(r.lostUpdates).toBe(1);
    const killedMidWrite = check([history('a', rmw(1, 0, 1)), history('b', rmw(1, 10, 2, false))], { c: 2 });
    expect(killedMidWrite).toMatchObject({
      lostUpdates: 0,
      unexplainedIncrements: 0,
      writesIndeterminate: 1,
    });
  });

  test('a single-attempt grant that took longer than the ttl is late', () => {
    const a = history('a', [
      [0, 'request', { i: 1, resource: 'r', ttl: 100, wait: 0, paused: true }],
      [150, 'grant', { i: 1, resource: 'r', token: 1, validityEnd: 160 }],
    ]);
    expect(check([a], {}).lateGrants).toBe(1);
  });

  test('a paused write is stale only when a newer token was granted before it was sent', () => {
    /** Worker `w` grants token 10 at 0 ms, pauses in its hold, and writes at `writeAt` (accepted or not). */
    const pausedHolder = (writeAt: number, ok: boolean) =>
      history('w', [
        [-1, 'request', { i: 1, resource: 'r', ttl: 500, wait: 1000 }],
        [0, 'grant', { i: 1, resource: 'r', token: 10, validityEnd: 490 }],
        [0.1, 'read-req', { i: 1, resource: 'r', token: 10 }],
        [0.2, 'read-ack', { i: 1, resource: 'r', token: 10, ok: true, value: 0 }],
        [0.3, 'pause', { i: 1, at: 'hold' }],
        [writeAt, 'write-req', { i: 1, resource: 'r', token: 10, value: 1 }],
        [writeAt + 0.1, 'write-ack', { i: 1, resource: 'r', token: 10, ok }],
      ]);
    const other = history('o', hold(1, 600, 700, 11, { value: 1 }));

    // Superseded (token 11 granted at 600 ms, the write at 750 ms) and accepted: a stale write.
    const stale = check([pausedHolder(750, true), other], {});
    expect(pausedWrites(stale)).toEqual({ pauses: 1, writes: 1, rejected: 0, accepted: 1, notSuperseded: 0 });
    // The same rejected by the store: fencing worked.
    const fenced = check([pausedHolder(750, false), other], {});
    expect(pausedWrites(fenced)).toEqual({
      pauses: 1,
      writes: 1,
      rejected: 1,
      accepted: 0,
      notSuperseded: 0,
    });
    // Nobody took the lock before the write (the other grant came later): not stale.
    const alone = check([pausedHolder(550, true), other], {});
    expect(pausedWrites(alone)).toEqual({ pauses: 1, writes: 1, rejected: 0, accepted: 0, notSuperseded: 1 });
  });
});
