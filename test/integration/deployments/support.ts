import { Redlock, type RedlockOptions } from '../../../lib/index.js';
import { RedisNodes, type RedisNodesOptions } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';

/**
 * Real, deliberately misconfigured servers for the deployment tests: each test starts the nodes it
 * needs and everything started here is ended by {@link Deployment.close}.
 */
export class Deployment {
  private readonly sets: RedisNodes[] = [];
  private readonly engines: Redlock[] = [];

  /** Starts `count` nodes with these options (e.g. extraArgs for the misconfiguration). */
  async nodes(count: number, options: RedisNodesOptions = {}): Promise<RedisNodes> {
    const set = await RedisNodes.start(count, options);
    this.sets.push(set);
    return set;
  }

  /** An engine over `nodes` (not connected), with a memory logger, closed by {@link close}. */
  engine(
    nodes: RedlockOptions['nodes'],
    options: Partial<RedlockOptions> = {},
  ): { engine: Redlock; logger: MemoryLogger } {
    const logger = new MemoryLogger();
    const engine = new Redlock({ nodes, logger, connectTimeout: 2000, restartGuard: false, ...options });
    this.engines.push(engine);
    return { engine, logger };
  }

  async close(): Promise<void> {
    await Promise.all(this.engines.splice(0).map((e) => e.close()));
    await Promise.all(this.sets.splice(0).map((s) => s.close()));
  }
}

/** What `promise` rejected with (fails the test when it resolved). */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection, but it resolved');
}

/** Waits until `condition()` holds, at most `ms`. */
export async function until(condition: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!(await condition())) {
    if (performance.now() > end) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
