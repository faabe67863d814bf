import { isDeepStrictEqual } from 'node:util';
import type { Redlock } from '../../lib/index.js';
import type { RedisNodes } from '../../lib/testing/index.js';
import type { VoterClocks } from '../../lib/core/guards/clock/readings.js';
import type { TestCluster } from './cluster.js';
import { eventually } from './eventually.js';

/*
 * Tests of who gets a lock next: what they wait for before the release, instead of fixed sleeps
 * that a loaded machine outlasts. A waiter is served in its turn once it is in line on every node
 * (its first attempt reached them), its engine listens there (a node skips a waiter nobody hears,
 * scripts/queue.ts; an engine subscribes when it first waits, after its first attempt), and its
 * ticket is behind the tickets of those who asked before it (ticketErrorMs).
 */

/** Each node's count of waiters in line for `resource` (the default key prefix). */
export function inLine(redis: RedisNodes, resource: string): Promise<number[]> {
  return Promise.all(redis.urls.map((_, i) => redis.client(i).zcard(`redlock:{${resource}}:queue`)));
}

/** Each node's count of subscribers to `engine`'s wake channel (1 while the engine listens there). */
export function subscribers(cluster: TestCluster, engine: Redlock): Promise<number[]> {
  const { channel } = (engine as unknown as { parts: { values: { channel: string } } }).parts.values;
  const nodes = cluster.redis.urls.map((_, i) => cluster.redis.client(i));
  return Promise.all(
    nodes.map(async (node) => Number(((await node.pubsub('NUMSUB', channel)) as [string, number])[1])),
  );
}

/**
 * Resolves once `engine`'s waiter for `resource` is one of `count` in line on every node and its
 * engine listens on every node; throws with what the nodes said after 5 s.
 */
export async function waiting(cluster: TestCluster, engine: Redlock, resource: string, count: number) {
  const every = (n: number) => cluster.redis.urls.map(() => n);
  const queued = await eventually(() => inLine(cluster.redis, resource), every(count), 5000);
  if (!isDeepStrictEqual(queued, every(count)))
    throw new Error(`expected ${count} in line for ${resource} on every node, found ${queued.join(', ')}`);
  const heard = await eventually(() => subscribers(cluster, engine), every(1), 5000);
  if (!isDeepStrictEqual(heard, every(1)))
    throw new Error(`expected the waiter's engine to listen on every node, subscribers ${heard.join(', ')}`);
}

/**
 * How far `engine`'s waiting tickets may be from the voters' time, ms: the widest half round trip
 * among its clock readings (an offset is taken at the midpoint of a request and its reply; the
 * voter read its clock somewhere between them), which bounds the median offset a ticket uses. Two
 * waiters' tickets are in the order they asked once the asks are further apart than the sum of
 * their engines' figures, read before they ask (an ask's replies read the clocks again).
 */
export function ticketErrorMs(engine: Redlock): number {
  const clocks = (engine as unknown as { parts: { clocks: VoterClocks } }).parts.clocks;
  const { low, high } = clocks as unknown as { low: Float64Array; high: Float64Array };
  let widest = 0;
  for (let i = 0; i < low.length; i++)
    if (!Number.isNaN(low[i]!)) widest = Math.max(widest, high[i]! - low[i]!);
  return widest / 2;
}

/** Resolves once more than `ms` have passed since `since` (performance.now()). */
export async function apartFrom(since: number, ms: number): Promise<void> {
  const left = ms + 1 - (performance.now() - since);
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}
