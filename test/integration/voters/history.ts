import type { Redlock } from '../../../lib/index.js';
import { check, parseHistory, type Report } from '../../faults/checker.js';

/**
 * A short S0 in one process: `engines` contend for `resources` (each loop: acquire with a wait,
 * hold a few ms, release), and every step is written in the fault suite's history format
 * (timestamps on the monotonic clock), so that its checker judges overlaps and token order.
 */
export async function contend(
  engines: readonly Redlock[],
  resources: readonly string[],
  { rounds = 15, ttl = 2000, holdMs = 2 } = {},
): Promise<Report> {
  const now = () => process.hrtime.bigint();
  const histories = await Promise.all(
    engines.map(async (engine, w) => {
      const lines: string[] = [];
      const log = (event: Record<string, unknown>) =>
        lines.push(JSON.stringify({ ...event, t: String(now()) }));
      for (let i = 0; i < rounds; i++) {
        const resource = resources[(i + w) % resources.length]!;
        log({ ev: 'request', i, resource, ttl, wait: 3000 });
        try {
          const lock = await engine.acquire(resource, { ttl, wait: 3000 });
          // The validity end on the monotonic clock: what is left of the lease, from now.
          const validityEnd = () => String(now() + BigInt(Math.floor((lock.expiresAt - Date.now()) * 1e6)));
          log({ ev: 'grant', i, token: lock.fencingToken, validityEnd: validityEnd() });
          await new Promise((r) => setTimeout(r, holdMs));
          log({ ev: 'release', i, validityEnd: validityEnd() });
          await lock.release();
        } catch (err) {
          log({ ev: 'fail', i, error: (err as Error).name, message: (err as Error).message });
        }
      }
      log({ ev: 'end' });
      return parseHistory(lines.join('\n'), `engine-${w}`);
    }),
  );
  return check(histories, {});
}
