import type { Redis } from 'ioredis';
import { ScriptVoter } from '../script-voter.js';
import type { VoterContext } from '../voter.js';
import { redisConnection, type RedisConnection } from './connection.js';
import { IoredisClient } from './ioredis-client.js';

/**
 * One Redis master, reached with ioredis, as a {@link Voter}: the lock operations of
 * {@link ScriptVoter} on an {@link IoredisClient} (ioredis-client.ts: admission, write batching,
 * one-way let-go calls, the wake subscription).
 */
export class RedisVoter extends ScriptVoter<IoredisClient> {
  constructor(connection: RedisConnection, context: VoterContext) {
    super(new IoredisClient(connection, context), context);
  }

  /** A voter for a URL, ioredis options or a ready client. */
  static from(node: Parameters<typeof redisConnection>[0], context: VoterContext): RedisVoter {
    return new RedisVoter(redisConnection(node, context.connectTimeout), context);
  }

  /** The connection that runs the scripts (ours, or the client passed in). */
  get client(): Redis {
    return this.adapter.client;
  }

  /** The connection that receives wake messages, once subscribed (always ours). */
  get subscriber(): Redis | undefined {
    return this.adapter.subscriber;
  }
}
