import { RedisVoter } from '../../../lib/core/voter/ioredis/redis-voter.js';
import type { EngineScripts } from '../../../lib/core/scripts/index.js';
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

  /** An engine whose voter tells us the scripts it was given, after a lock cycle and an inspect. */
  async function engineUsing(
    options: Partial<RedlockOptions>,
  ): Promise<{ engine: Redlock; scripts: EngineScripts }> {
    let scripts: EngineScripts | undefined;
    const url = cluster.url(0);
    const engine = await cluster.engine({
      ...options,
      nodes: [
        {
          createVoter: (context) => {
            scripts = context.scripts;
            return RedisVoter.from(url, context);
          },
        },
      ],
    });
    const lock = await engine.acquire('shared-cache');
    await engine.inspect('shared-cache');
    await lock.release();
    return { engine, scripts: scripts! };
  }

  test('two engines with different guard, fence expiry, node timeout and prefix: the same scripts, by SHA', async () => {
    const admin = cluster.redis.client(0);
    // Trusted as they are, so that both engines vote at once with the guard on.
    await admin.set('redlock:__restart_guard__', '0');
    await admin.set('other:__restart_guard__', '0');
    await admin.call('SCRIPT', 'FLUSH');

    const first = await engineUsing({ restartGuard: 15_000, fenceIdleTtl: 60_000, nodeTimeout: 100 });
    const one = await cachedScripts();
    const second = await engineUsing({
      restartGuard: 30_000,
      ttl: 2_000,
      fenceIdleTtl: 3_600_000,
      nodeTimeout: 300,
      keyPrefix: 'other:',
    });
    const two = await cachedScripts();

    const shas = (s: EngineScripts) => s.all.map((script) => `${script.name} ${script.sha}`);
    expect(shas(second.scripts)).toEqual(shas(first.scripts));
    expect(await admin.script('EXISTS', ...first.scripts.all.map((s) => s.sha))).toEqual(
      first.scripts.all.map(() => 1),
    );
    expect(one).toBeGreaterThanOrEqual(first.scripts.all.length);
    expect(two).toBe(one);
  });
});
