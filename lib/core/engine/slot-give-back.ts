import type { Voters } from '../quorum/voters.js';
import { RELEASE, type LetGo } from '../scripts/let-go.js';
import type { SlotVote } from '../scripts/semaphore.js';
import type { Voter } from '../voter/voter-api.js';
import type { AcquireRequest } from './acquire.js';

/*
 * What a semaphore attempt (semaphore.ts) gives back of its slot votes once a round is decided:
 * the slots it does not keep, and its place in the shared queue.
 */

/**
 * Gives back what the attempt does not keep, on every voter, as its answer comes (also late):
 * a slot other than the one won (to the first waiter), the caller's place in the shared queue once
 * it won, and, when it lost, whatever it got (keeping its place in line when it waits). The slot
 * won is kept where it was granted; if the grant could not be used (`kept` false), it goes too.
 * A late answer is left to a later round of the same acquire once one started (`superseded`).
 */
export function giveBackSlots(
  voters: Voters,
  request: AcquireRequest,
  value: string,
  order: readonly number[],
  pending: ReadonlyArray<Promise<SlotVote>>,
  replies: ReadonlyArray<SlotVote | undefined>,
  winner: number | undefined,
  kept: boolean,
  superseded: () => boolean,
): void {
  const keys = request.lockKeys;
  const waits = request.ticket !== '';
  const lost: LetGo = waits && winner === undefined ? { op: 'requeue', ticket: request.ticket } : RELEASE;
  const others = winner === undefined || !kept ? keys : keys.filter((_, i) => i !== winner);
  const letGo = (voter: Voter, vote: SlotVote | undefined) => {
    if (vote?.kind === 'abstaining' || vote?.kind === 'conflict') return;
    if (vote?.kind === 'busy' && !(waits && winner !== undefined)) return; // holds nothing; keeps its place
    if (vote?.kind === 'granted' && winner !== undefined && kept && order[vote.index] === winner) return;
    void voters.letGo(others, value, lost, { on: [voter] });
  };
  pending.forEach((sent, i) => {
    const voter = voters.list[i]!;
    if (replies[i]) letGo(voter, replies[i]);
    // No answer yet (or it failed): a grant may still land there; free it once it is known.
    else
      sent.then(
        (vote) => superseded() || letGo(voter, vote),
        () => superseded() || letGo(voter, undefined),
      );
  });
}
