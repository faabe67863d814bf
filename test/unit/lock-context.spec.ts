import { AsyncLocalStorage } from 'node:async_hooks';
import { queryObjects } from 'node:v8';
import { LockContext } from '../../lib/core/engine/held-lock.js';
import type { Lock } from '../../lib/core/engine/lock.js';

/*
 * The engine's record of the locks an async call chain holds (`LockContext` in lib/core/engine/held-lock.ts).
 * Node keeps every AsyncLocalStorage that ever ran in a process-wide list and walks it at each
 * promise created anywhere: a storage per engine made every engine that once ran `using` stay there
 * (and slow every promise of the process) after it was gone. Found by the simulation (issue 37),
 * which starts thousands of engines in one process.
 */

const lock = (resources: string[]) =>
  ({
    resources,
    mode: 'write',
    fencingTokens: Object.fromEntries(resources.map((r) => [r, 1])),
  }) as unknown as Lock;

describe('LockContext', () => {
  it('keeps no storage per engine once the engines are gone', async () => {
    const before = queryObjects(AsyncLocalStorage, { format: 'count' }) as number;
    for (let i = 0; i < 20; i++) {
      const context = new LockContext();
      await context.run(lock(['a']), async () => {
        await Promise.resolve();
        expect(context.join(['a'])).toBeDefined();
      });
    }
    const after = queryObjects(AsyncLocalStorage, { format: 'count' }) as number;
    expect(after - before).toBeLessThanOrEqual(1);
  });

  it("keeps each engine's locks apart in one call chain", async () => {
    const one = new LockContext();
    const two = new LockContext();
    await one.run(lock(['a']), async () => {
      await Promise.resolve();
      expect(one.join(['a'])).toBeDefined();
      expect(two.join(['a'])).toBeUndefined();
      await two.run(lock(['b']), async () => {
        await Promise.resolve();
        expect(one.join(['a'])).toBeDefined();
        expect(two.join(['b'])).toBeDefined();
        expect(one.join(['b'])).toBeUndefined();
      });
    });
    expect(one.join(['a'])).toBeUndefined();
  });
});
