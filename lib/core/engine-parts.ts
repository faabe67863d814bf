import type { KeySpace } from './keys.js';
import type { ResolvedOptions } from './options.js';
import type { LockValues } from './scripts/index.js';
import type { VoterClocks } from './quorum/voter-clocks.js';
import type { Voters } from './quorum/voters.js';

/** What the parts of one engine share (built once by `Redlock`). */
export interface EngineParts {
  readonly options: ResolvedOptions;
  readonly voters: Voters;
  readonly keys: KeySpace;
  readonly values: LockValues;
  /** The voters' time as this engine knows it (waiting tickets, fence seeds). */
  readonly clocks: VoterClocks;
  /**
   * How long a voter hands the lock to the first waiter for (a lock handed over, or a turn to
   * claim), ms: a waiter that died or stalls holds the lock up no longer than this.
   */
  readonly turnMs: number;
  /** The fence seed an attempt proposes now, microseconds (see scripts/fence.ts). */
  seedProposalUs(): number;
  /** Clock drift allowance for a lease of `ttl` ms: ttl * driftFactor + 2 ms. */
  drift(ttl: number): number;
}
