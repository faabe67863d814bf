import { realRuntime } from '../../lib/core/runtime.js';
import type { HandOff } from '../../lib/core/engine/hand-off.js';
import { WakeSubscription } from '../../lib/core/engine/wake-subscription.js';

const handOff = (node: number): HandOff => ({
  node,
  value: 'waiter-1',
  token: 100 + node,
  clockUs: 1_000_000 * node,
});

/** The waiter side of a hand-over, without Redis: when does an announcement wake it? */
describe('WakeSubscription', () => {
  const settled = async (promise: Promise<unknown>) => {
    let done = false;
    void promise.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

  test('wakes when a majority of the nodes announced the same hand-over, not at the first', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    const woken = subscription.wait(10_000);
    subscription.wake('release-1');
    subscription.wake('release-1');
    expect(await settled(woken)).toBe(false); // 2 of 5 nodes: the other 3 still hold it
    subscription.wake('release-1');
    expect(await woken).toBe('woken');
  });

  test('announcements of different hand-overs are not added up', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    const woken = subscription.wait(10_000);
    subscription.wake('release-1');
    subscription.wake('release-2');
    subscription.wake('release-3');
    expect(await settled(woken)).toBe(false);
    subscription.wake('release-2');
    subscription.wake('release-2');
    expect(await woken).toBe('woken');
  });

  test('the nodes after the majority do not wake it again', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    for (let i = 0; i < 5; i++) subscription.wake('release-1');
    expect(await subscription.wait(10_000)).toBe('woken'); // kept while no wait was running
    expect(await subscription.wait(20)).toBe('timeout'); // the 4th and 5th did not count again
  });

  test('an announcement without a cause wakes at once', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    const woken = subscription.wait(10_000);
    subscription.wake('');
    expect(await woken).toBe('woken');
  });

  test('a hand-over counts once per node and ends the wait at a majority of nodes', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    const handed = subscription.wait(10_000);
    subscription.handOff(handOff(0));
    subscription.handOff(handOff(0)); // the same node twice is still one node
    subscription.handOff(handOff(1));
    expect(await settled(handed)).toBe(false);
    subscription.handOff(handOff(4));
    expect(await handed).toBe('handed');
    expect(
      subscription
        .handedOver()
        .map((h) => h.node)
        .sort(),
    ).toEqual([0, 1, 4]);
  });

  test('hand-overs that stop short of a majority wake it after the grace period, to try', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 30, realRuntime);
    const started = performance.now();
    const woken = subscription.wait(10_000);
    subscription.handOff(handOff(2));
    subscription.handOff(handOff(3));
    expect(await woken).toBe('woken');
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
    subscription.close();
  });

  test('a hand-over during an attempt is kept for the next wait, ahead of a wake-up', async () => {
    const subscription = new WakeSubscription(3, () => undefined, 1000, realRuntime);
    for (const node of [0, 1, 2]) subscription.handOff(handOff(node));
    subscription.wake('');
    expect(await subscription.wait(10_000)).toBe('handed');
    expect(await subscription.wait(20)).toBe('timeout');
  });
});
