import { realRuntime } from '../../core/runtime.js';
import { TransportVoter } from '../../core/voter/voter.js';
import type { VoterContext, VoterFactory } from '../../core/voter/voter-api.js';
import { MemoryServer } from './server.js';
import { MemoryTransport } from './transport.js';

/*
 * The in-memory voter's names before the in-memory transport: the same behaviour (the library's
 * voter over a MemoryTransport), kept until the next major version.
 */

/** @deprecated A server's clock is its runtime's (`new MemoryServer({ runtime })`) plus `stepClock()`. */
export type MemoryClock = () => number;

/** @deprecated Use {@link MemoryServer} (`new MemoryState(clock)`: a server on that wall clock). */
export class MemoryState extends MemoryServer {
  constructor(clock?: MemoryClock) {
    super(clock ? { runtime: { ...realRuntime, wallNow: clock } } : {});
  }
}

/** @deprecated Use `memoryNode(server)` in `nodes`: the same voter. */
export class MemoryVoter extends TransportVoter {
  constructor(
    label: string,
    /** The server voted on. */
    readonly state: MemoryServer,
    context: VoterContext,
  ) {
    super(new MemoryTransport([state], context.runtime, { label }), context);
  }

  /** @deprecated Use `memoryNode(server)`. A factory for `nodes`: one voter per engine, on `state`. */
  static factory(
    label = 'memory://0',
    state: MemoryServer = new MemoryServer(),
  ): VoterFactory & { readonly state: MemoryServer } {
    return { state, createVoter: (context) => new MemoryVoter(label, state, context) };
  }
}
