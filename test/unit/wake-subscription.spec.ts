import { WakeSubscription } from '../../lib/core/wake-channel.js';

/** The waiter side of a hand-over, without Redis: when does an announcement wake it? */
describe('WakeSubscription', () => {
  const settled = async (promise: Promise<unknown>) => {
    let done = false;
    void promise.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

  test('wakes when a majority of the nodes announced the same hand-over, not at the first', async () => {
    const subscription = new WakeSubscription(3, () => undefined);
    const woken = subscription.wait(10_000);
    subscription.wake('release-1');
    subscription.wake('release-1');
    expect(await settled(woken)).toBe(false); // 2 of 5 nodes: the other 3 still hold it
    subscription.wake('release-1');
    expect(await woken).toBe('woken');
  });

  test('announcements of different hand-overs are not added up', async () => {
    const subscription = new WakeSubscription(3, () => undefined);
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
    const subscription = new WakeSubscription(3, () => undefined);
    for (let i = 0; i < 5; i++) subscription.wake('release-1');
    expect(await subscription.wait(10_000)).toBe('woken'); // kept while no wait was running
    expect(await subscription.wait(20)).toBe('timeout'); // the 4th and 5th did not count again
  });

  test('an announcement without a cause wakes at once', async () => {
    const subscription = new WakeSubscription(3, () => undefined);
    const woken = subscription.wait(10_000);
    subscription.wake('');
    expect(await woken).toBe('woken');
  });
});
