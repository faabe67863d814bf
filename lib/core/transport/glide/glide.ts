import type { VoterContext } from '../../voter/voter-api.js';
import type { Transport } from '../transport.js';

/** A Valkey GLIDE client or cluster client as a transport. */
export function glideTransport(node: object, context: VoterContext): Transport {
  void node;
  void context;
  throw new Error('GLIDE transport: not ported yet');
}
