/** The semaphore checks must see too many holders, and run the lock checks per permit (no Redis). */
import { check, parseHistory, type History } from './checker.js';
import { holdersAtOnce, shares } from './semaphore-checks.js';

const ns = (ms: number) => String(BigInt(Math.round(ms * 1e6)) + 1_000_000_000_000n);

function history(worker: string, events: Array<[number, string, Record<string, unknown>]>): History {
  const lines = events.map(([t, ev, fields]) => {
    const out: Record<string, unknown> = { ev, t: ns(t), ...fields };
    if (typeof out.validityEnd === 'number') out.validityEnd = ns(out.validityEnd);
    return JSON.stringify(out);
  });
  return parseHistory(lines.join('\n'), worker);
}

/** One hold of a 3-permit semaphore `s`: `permit` and `token` undefined for a peer's semaphore. */
function hold(
  i: number,
  from: number,
  to: number,
  permit?: number,
  token?: number,
): Array<[number, string, Record<string, unknown>]> {
  const resource = 's';
  return [
    [from - 1, 'request', { i, resource, ttl: 1000, wait: 1000, permits: 3 }],
    [from, 'grant', { i, resource, token, permit, validityEnd: from + 900 }],
    [to, 'release', { i, resource, validityEnd: from + 900 }],
  ];
}

describe('semaphore checks', () => {
  test('three holders of three permits: no excess, no overlap per permit', () => {
    const hs = [
      history('a', hold(1, 10, 50, 0, 100)),
      history('b', hold(1, 20, 60, 1, 200)),
      history('c', hold(1, 30, 70, 2, 300)),
      history('d', hold(1, 50, 90, 0, 101)), // takes permit 0 as a releases it
    ];
    const r = check(hs, {});
    expect(r).toMatchObject({ grants: 4, overlaps: 0, tokenOrderViolations: 0, duplicateTokens: 0 });
    expect(holdersAtOnce(r.acquires, 's', 3)).toEqual({ max: 3, excessGrants: 0, excessMs: 0, examples: [] });
  });

  test('a fourth holder is an excess grant, with the time over the limit', () => {
    const hs = [
      history('a', hold(1, 10, 50, 0, 100)),
      history('b', hold(1, 20, 60, 1, 200)),
      history('c', hold(1, 30, 70, 2, 300)),
      history('d', hold(1, 40, 55, 0, 101)),
    ];
    const held = holdersAtOnce(check(hs, {}).acquires, 's', 3);
    expect(held).toMatchObject({ max: 4, excessGrants: 1 });
    expect(held.excessMs).toBeCloseTo(10, 6); // 4 holders from 40 (d) to 50 (a releases)
    expect(held.examples[0]).toContain('d#1 granted s permit 0 as holder 4 of 3');
  });

  test('two holders of one permit overlap, and tokens are ordered per permit', () => {
    const hs = [
      history('a', hold(1, 10, 50, 0, 100)),
      history('b', hold(1, 40, 60, 0, 101)), // permit 0 while a holds it
      history('c', [...hold(1, 70, 80, 1, 500), ...hold(2, 90, 95, 1, 400)]), // permit 1 goes back
      history('d', hold(1, 100, 110, 2, 5)), // a low token on another permit is fine
    ];
    const r = check(hs, {});
    expect(r.overlaps).toBe(1);
    expect(r.tokenOrderViolations).toBe(1);
    expect(r.examples.join('\n')).toContain('overlap on s#0');
    expect(r.examples.join('\n')).toContain('token order on s#1');
  });

  test("a peer's semaphore (no permits, no tokens) is counted by holders only", () => {
    const hs = ['a', 'b', 'c', 'd'].map((w, k) => history(w, hold(1, 10 + k, 50)));
    const r = check(hs, {});
    expect(r).toMatchObject({ grants: 4, overlaps: 0, duplicateTokens: 0, tokenOrderViolations: 0 });
    expect(holdersAtOnce(r.acquires, 's', 3)).toMatchObject({ max: 4, excessGrants: 1 });
  });

  test('shares: the worst ratio of a worker to the median, either way', () => {
    const hs = [
      history('a', [...hold(1, 10, 11, 0, 1), ...hold(2, 20, 21, 0, 2)]),
      history('b', [...hold(1, 30, 31, 0, 3), ...hold(2, 40, 41, 0, 4), ...hold(3, 50, 51, 0, 5)]),
      history('c', hold(1, 60, 61, 0, 6)),
    ];
    const acquires = check(hs, {}).acquires;
    const s = shares(acquires, 's', ['a', 'b', 'c']);
    expect(s.grants).toEqual([2, 3, 1]);
    expect(s.median).toBe(2);
    expect(s.worstRatio).toBe(2); // c: 2 / 1
    expect(shares(acquires, 's', ['a', 'b', 'c', 'starved']).worstRatio).toBe(Infinity);
  });
});
