/** The read-write checks must see a writer beside a reader, and tokens out of order (no Redis). */
import { check, parseHistory, type History } from './checker.js';
import { readWriteChecks } from './read-write-checks.js';

const ns = (ms: number) => String(BigInt(Math.round(ms * 1e6)) + 1_000_000_000_000n);

function history(worker: string, events: Array<[number, string, Record<string, unknown>]>): History {
  const lines = events.map(([t, ev, fields]) => {
    const out: Record<string, unknown> = { ev, t: ns(t), ...fields };
    if (typeof out.validityEnd === 'number') out.validityEnd = ns(out.validityEnd);
    return JSON.stringify(out);
  });
  return parseHistory(lines.join('\n'), worker);
}

/** One hold of the read-write lock `rw`, requested 1 ms before its grant. */
function hold(
  i: number,
  mode: 'read' | 'write',
  from: number,
  to: number,
  token: number,
  requested = from - 1,
): Array<[number, string, Record<string, unknown>]> {
  const resource = 'rw';
  return [
    [requested, 'request', { i, resource, ttl: 1000, wait: 1000, mode }],
    [from, 'grant', { i, resource, token, mode, validityEnd: from + 900 }],
    [to, 'release', { i, resource, validityEnd: from + 900 }],
  ];
}

const run = (hs: History[]) => {
  const r = check(hs, {});
  return { r, rw: readWriteChecks(r.acquires, 'rw') };
};

describe('read-write checks', () => {
  test('readers share between writes, tokens in order: no violation', () => {
    const { r, rw } = run([
      history('a', [...hold(1, 'write', 10, 20, 100), ...hold(2, 'write', 60, 70, 101)]),
      history('b', [...hold(1, 'read', 21, 50, 100), ...hold(2, 'read', 71, 80, 101)]),
      history('c', hold(1, 'read', 25, 55, 100)),
      history('d', hold(1, 'read', 30, 40, 100)),
    ]);
    // The lock checks run over the writes alone: readers sharing a token are neither overlaps
    // nor duplicate tokens there.
    expect(r).toMatchObject({ grants: 6, overlaps: 0, tokenOrderViolations: 0, duplicateTokens: 0 });
    expect(rw).toMatchObject({
      readGrants: 4,
      writeGrants: 2,
      writerOverlaps: 0,
      readerOverlaps: 3,
      maxReadersAtOnce: 3,
      tokenOrderViolations: 0,
      writeShare: 2 / 6,
      writesFailed: 0,
      examples: [],
    });
  });

  test('a writer beside a reader, and a writer beside a writer, are violations', () => {
    const { r, rw } = run([
      history('a', hold(1, 'write', 10, 40, 100)),
      history('b', hold(1, 'read', 30, 50, 100)), // a reader while a writes
      history('c', hold(1, 'write', 60, 80, 101)),
      history('d', hold(1, 'write', 70, 90, 102)), // a writer while c writes
      history('e', hold(1, 'read', 95, 99, 102)),
    ]);
    expect(rw.writerOverlaps).toBe(2);
    expect(rw.readerOverlaps).toBe(0);
    expect(rw.examples.join('\n')).toContain(
      'writer overlap on rw: write a#1 (token 100) held until 10.0 ms',
    );
    expect(rw.examples.join('\n')).toContain('write c#1 (token 101)');
    expect(r.overlaps).toBe(1); // the generic check sees the two writers only
  });

  test('a read below the write before it, or not below the write after it, is out of order', () => {
    const { rw } = run([
      history('a', [...hold(1, 'write', 10, 20, 100), ...hold(2, 'write', 100, 110, 101)]),
      history('b', hold(1, 'read', 30, 40, 99)), // below the write granted before it
      history('c', hold(1, 'read', 50, 60, 101)), // not below the write asked for after it
      history('d', hold(1, 'read', 70, 80, 100)), // fine
    ]);
    expect(rw.tokenOrderViolations).toBe(2);
    expect(rw.examples.join('\n')).toContain(
      'write a#1 (token 100) was granted before read b#1 (token 99) asked',
    );
    expect(rw.examples.join('\n')).toContain(
      'write a#2 (token 101) asked after read c#1 (token 101) was granted',
    );
  });

  test('a write not above an earlier write is out of order; concurrent requests are not ordered', () => {
    const { rw } = run([
      history('a', hold(1, 'write', 10, 20, 100)),
      history('b', hold(1, 'write', 30, 40, 100)), // same token as a write before it
      // A read asked at 45 and granted at 61 overlaps in time with a write asked at 50: either
      // order is possible, so its token may equal the write's.
      history('c', hold(1, 'read', 61, 70, 101, 45)),
      history('d', hold(1, 'write', 51, 60, 101, 50)),
    ]);
    expect(rw.tokenOrderViolations).toBe(1);
    expect(rw.examples[0]).toContain('was granted before write b#1 (token 100) asked');
  });

  test("writers' progress: share, longest wait, failures and reads that overtook a waiting writer", () => {
    const { rw } = run([
      history('w', [
        ...hold(1, 'write', 300, 310, 100, 0), // waited 300 ms
        [320, 'request', { i: 2, resource: 'rw', ttl: 1000, wait: 100, mode: 'write' }],
        [420, 'fail', { i: 2, resource: 'rw', error: 'LockNotAcquiredError' }],
      ]),
      history('r', [
        ...hold(1, 'read', 10, 20, 99), // asked 1 ms after the writer: not counted
        ...hold(2, 'read', 200, 210, 99, 100), // asked 100 ms after the writer, granted first
        ...hold(3, 'read', 311, 320, 100),
      ]),
    ]);
    expect(rw).toMatchObject({
      readGrants: 3,
      writeGrants: 1,
      writesFailed: 1,
      readsFailed: 0,
      overtakingReads: 1,
      writeRequestShare: 2 / 5,
      writeShare: 1 / 4,
    });
    expect(rw.longestWriteWaitMs).toBeCloseTo(300, 6);
    expect(rw.writeShareRatio).toBeCloseTo(0.625, 6);
  });
});
