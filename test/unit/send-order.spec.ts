import { SendOrder } from '../../lib/core/voter/send.js';

/*
 * The order of one voter's acquires and let-gos (lib/core/voter/send.ts). What it protects is
 * seen on real servers in the conformance row "release semantics" on the Cluster columns (a release
 * followed by MOVED was sent again after the same voter's next acquire, which found its own lock
 * still held) and in release.spec (an acquire held back for its server's check, its release sent
 * first: the key stayed held); here, the rules.
 */

/** A send that resolves when told to, recording when it was called. */
function deferredSend(log: string[], name: string) {
  let resolve!: (value: string) => void;
  const reply = new Promise<string>((r) => (resolve = r));
  return {
    send: () => {
      log.push(`sent ${name}`);
      return reply;
    },
    answer: () => resolve(name),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('an acquire of a key waits for the same voter’s let-go of it; other keys do not wait', async () => {
  const order = new SendOrder(true);
  const log: string[] = [];
  const release = deferredSend(log, 'release a');
  const again = deferredSend(log, 'acquire b');
  const other = deferredSend(log, 'acquire c');
  void order.letGo(['k'], 'a', release.send);
  const acquired = order.acquire(['k'], 'b', again.send);
  void order.acquire(['other'], 'c', other.send);
  await tick();
  expect(log).toEqual(['sent release a', 'sent acquire c']);
  release.answer();
  await tick();
  expect(log).toEqual(['sent release a', 'sent acquire c', 'sent acquire b']);
  again.answer();
  await expect(acquired).resolves.toBe('acquire b');
});

test('a let-go waits for the same voter’s acquire of its value, and a failed let-go releases the wait', async () => {
  const order = new SendOrder(true);
  const log: string[] = [];
  const acquire = deferredSend(log, 'acquire a');
  void order.acquire(['k'], 'a', acquire.send);
  void order.letGo(['k'], 'a', () => {
    log.push('sent release a');
    return Promise.reject(new Error('connection lost'));
  });
  await tick();
  expect(log).toEqual(['sent acquire a']);
  acquire.answer();
  await tick();
  const next = deferredSend(log, 'acquire b');
  void order.acquire(['k'], 'b', next.send);
  await tick();
  expect(log).toEqual(['sent acquire a', 'sent release a', 'sent acquire b']);
});

describe('a client that keeps the order of what was sent (resends: false)', () => {
  test('a let-go goes at once, and the next acquire of its key right behind it (no wait for replies)', async () => {
    const order = new SendOrder(false);
    const log: string[] = [];
    const acquire = deferredSend(log, 'acquire a'); // sent, not answered yet (a straggler)
    const release = deferredSend(log, 'release a');
    const again = deferredSend(log, 'acquire b');
    void order.acquire(['k'], 'a', acquire.send);
    void order.letGo(['k'], 'a', release.send);
    void order.acquire(['k'], 'b', again.send);
    // All sent before any reply: the connection runs them in that order.
    expect(log).toEqual(['sent acquire a', 'sent release a', 'sent acquire b']);
  });

  test('a let-go waits while the voter holds its acquire back; an acquire of the key goes right after that let-go', async () => {
    const order = new SendOrder(false);
    const log: string[] = [];
    let checked!: () => void;
    const check = new Promise<void>((resolve) => (checked = resolve)); // e.g. its server's check
    const acquire = deferredSend(log, 'acquire a');
    const release = deferredSend(log, 'release a');
    const again = deferredSend(log, 'acquire b');
    void order.acquire(['k'], 'a', () => {
      const voting = check.then(acquire.send);
      order.hold('a', check);
      return voting;
    });
    void order.letGo(['k'], 'a', release.send);
    void order.acquire(['k'], 'b', again.send);
    await tick();
    expect(log).toEqual([]);
    checked();
    await tick();
    // The release right after its acquire was sent (not answered), the next acquire after it.
    expect(log).toEqual(['sent acquire a', 'sent release a', 'sent acquire b']);
  });

  test('letGoSince: a let-go of the value sent after the acquire, not answered yet (the acquire met NOSCRIPT before its reply)', async () => {
    const order = new SendOrder(false);
    const log: string[] = [];
    const release = deferredSend(log, 'release a');
    const before = order.letGoMark('a');
    expect(order.letGoSince('a', before)).toBe(false);
    const sent = order.letGo(['k'], 'a', release.send);
    expect(order.letGoSince('a', before)).toBe(true);
    expect(order.letGoSince('b', order.letGoMark('b'))).toBe(false); // another value
    // An acquire sent after the let-go: the let-go ran before it.
    expect(order.letGoSince('a', order.letGoMark('a'))).toBe(false);
    release.answer();
    await sent;
    await tick();
    expect(order.letGoSince('a', before)).toBe(false); // answered: nothing left to keep
  });
});
