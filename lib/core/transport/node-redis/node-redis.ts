import type { VoterContext } from '../../voter/voter-api.js';
import type { Transport } from '../transport.js';

/** A node-redis client, cluster, URL or options as a transport. */
export function nodeRedisTransport(node: string | object, context: VoterContext): Transport {
  void node;
  void context;
  throw new Error('node-redis transport: not ported yet');
}
