import { LOCK_SCRIPTS } from '../../../lib/core/scripts/library.js';
import type { Redlock, RedlockOptions } from '../../../lib/index.js';
import { TestCluster } from '../../support/cluster.js';

/**
 * The scripts are constants (settings travel as an argument): engines with different options on
 * one server share one SHA per script, and leave as many scripts in its cache as one engine does.
 * (Before, each engine compiled its settings into its scripts: two engines left 13 where one left 9.)
 */
describe('one script cache for every engine', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(1);
  });
  afterAll(() => cluster?.close());

  async function cachedScripts(): Promise<number> {
    const info = (await cluster.redis.client(0).info('memory')) as string;
    return Number(/number_of_cached_scripts:(\d+)/.exec(info)?.[1]);
  }

  /** An engine with `options`, after a lock cycle and an inspect. */
  async function engineUsing(options: Partial<RedlockOptions>): Promise<Redlock> {
    const engine = await cluster.engine(options);
    const lock = await engine.acquire('shared-cache');
    await engine.inspect('shared-cache');
    await lock.release();
    return engine;
  }

  test('two engines with different guard, fence expiry, node timeout and prefix: the same scripts, by SHA', async () => {
    const admin = cluster.redis.client(0);
    // Trusted as they are, so that both engines vote at once with the guard on.
    await admin.set('redlock:__restart_guard__', '0');
    await admin.set('other:__restart_guard__', '0');
    await admin.call('SCRIPT', 'FLUSH');

    await engineUsing({ restartGuard: 15_000, fenceIdleTtl: 60_000, nodeTimeout: 100 });
    const one = await cachedScripts();
    await engineUsing({
      restartGuard: 30_000,
      ttl: 2_000,
      fenceIdleTtl: 3_600_000,
      nodeTimeout: 300,
      keyPrefix: 'other:',
    });
    const two = await cachedScripts();

    // Every lock script is loaded (a new connection loads them all), once for both engines.
    expect(await admin.script('EXISTS', ...LOCK_SCRIPTS.map((s) => s.sha))).toEqual(
      LOCK_SCRIPTS.map(() => 1),
    );
    expect(one).toBeGreaterThanOrEqual(LOCK_SCRIPTS.length);
    expect(two).toBe(one);
  });
});
