/**
 * The timeline renderer (timeline.ts) on a hand-written history: the page has one lane per worker
 * process, one bar per hold carrying its token, the fault windows shaded and labelled, the nodes
 * they hit, refused and stale writes marked, overlaps drawn red, and one latency dot per decided
 * acquire. No Redis needed.
 */
import { check, parseHistory } from './checker.js';
import { nodesOf, renderTimeline } from './timeline.js';

const ns = (ms: number) => String(BigInt(Math.round(ms * 1e6)) + 1_000_000_000_000n);
const line = (ev: string, t: number, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ ev, t: ns(t), ...fields });

/** One acquire -> read -> write -> release of `worker`, or a failed acquire. */
function iteration(i: number, at: number, token: number | undefined, hold: number, writeOk = true): string[] {
  const r = 's';
  if (token === undefined) {
    return [
      line('request', at, { i, resource: r, ttl: 1000 }),
      line('fail', at + 100, { i, error: 'QuorumUnavailableError' }),
    ];
  }
  return [
    line('request', at, { i, resource: r, ttl: 1000 }),
    line('grant', at + 1, { i, resource: r, token, validityEnd: ns(at + 900) }),
    line('read-req', at + 2, { i, resource: r, token }),
    line('read-ack', at + 3, { i, resource: r, token, ok: true, value: 0 }),
    line('write-req', at + hold - 1, { i, resource: r, token, value: 1 }),
    line('write-ack', at + hold, { i, resource: r, token, ok: writeOk }),
    line('release', at + hold + 1, { i, resource: r, validityEnd: ns(at + 900) }),
    line('released', at + hold + 2, { i, resource: r }),
  ];
}

const histories = (overlap: boolean) => [
  parseHistory(
    [...iteration(1, 0, 101, 50), ...iteration(2, 300, undefined, 0), ...iteration(3, 500, 104, 50)].join(
      '\n',
    ),
    'w0',
  ),
  parseHistory(
    [...iteration(1, overlap ? 20 : 100, 102, 50, false), ...iteration(2, 200, 103, 50)].join('\n'),
    'w1',
  ),
];
const windows = [{ label: 'partition 1,3', start: BigInt(ns(250)), end: BigInt(ns(450)) }];

test('one lane per worker, token-labelled holds, shaded faults, marked writes, latency dots', () => {
  const report = check(histories(false), { s: 3 });
  const html = renderTimeline({ id: 'T1', title: 'test run', report, windows });
  // Two charts (the whole run, and the zoom on the fault): 2 worker lanes in each.
  expect(html.match(/<g class="lane" /g)).toHaveLength(2 * 2);
  expect(html).toContain('data-worker="w0"');
  expect(html).toContain('data-worker="w1"');
  // 4 grants: each drawn in its worker lane and in the resource lane, in overview and zoom.
  expect(html.match(/class="hold"/g)).toHaveLength(4 * 2 * 2);
  for (const token of [101, 102, 103, 104]) expect(html).toContain(`token ${token}, held`);
  expect(html).toMatch(/class="token">(…)?10[1-4]</); // the zoom labels bars with their token
  expect(html).toContain('class="wlabel">partition 1,3<');
  expect(html.match(/<g class="node-lane" data-node="(\d)"/g)).toEqual([
    '<g class="node-lane" data-node="1"',
    '<g class="node-lane" data-node="3"',
    '<g class="node-lane" data-node="1"',
    '<g class="node-lane" data-node="3"',
  ]);
  expect(html).toContain('class="refused"'); // w1's refused write
  expect(html).not.toContain('class="stale"');
  expect(html).not.toContain('class="overlap"');
  expect(html.match(/class="lat-(ok|fail) point"/g)).toHaveLength(5);
  expect(html).toContain('0 overlapping holds');
});

test('an overlap is drawn red in the lock lane', () => {
  const report = check(histories(true), { s: 3 });
  expect(report.overlaps).toBe(1);
  const html = renderTimeline({ id: 'T2', title: 'overlapping', report, windows: [] });
  expect(html).toContain('class="overlap"');
  expect(html).toContain('1 overlapping holds');
});

test('window labels name the nodes they hit', () => {
  expect(nodesOf('kill 1,3 + stop 2')).toEqual([
    { node: 1, kind: 'kill' },
    { node: 3, kind: 'kill' },
    { node: 2, kind: 'stop' },
  ]);
  expect(nodesOf('replies dropped 4')).toEqual([{ node: 4, kind: 'replies dropped' }]);
  expect(nodesOf('pause holder')).toEqual([]);
});
