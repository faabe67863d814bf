import type { NodeFailure } from '../errors.js';
import type { Runtime } from '../runtime.js';
import type { Voter } from '../voter/voter-api.js';

/** Votes needed among `count` voters: a strict majority. The one quorum formula of the library. */
export function quorumOf(count: number): number {
  return Math.floor(count / 2) + 1;
}

/** How one voter's reply counts: for, against, or not at all (with a log-safe reason). */
export type Vote = 'yes' | 'no' | { readonly declined: string };

/** Options of a round. */
export interface RoundOptions<R> {
  /**
   * Sees every voter's outcome, also those that come after the decision: its reply, or undefined
   * when the operation failed (not when the round stopped waiting for it).
   */
  readonly observe?: (index: number, reply: R | undefined) => void;
}

/** The decision of one round, taken as soon as it was certain. */
export interface RoundOutcome<R> {
  /** A majority voted yes. */
  readonly ok: boolean;
  /** Replies that voted yes, with the voter index, in arrival order. */
  readonly yes: ReadonlyArray<{ readonly index: number; readonly reply: R }>;
  /** Replies that voted no (e.g. lock busy), in arrival order. */
  readonly no: readonly R[];
  /** Voters that failed, timed out or declined, with log-safe reasons. */
  readonly unavailable: readonly NodeFailure[];
  /** Per voter: what it answered before the decision (undefined: no answer yet). */
  readonly votes: ReadonlyArray<'yes' | 'no' | 'declined' | 'failed' | undefined>;
}

/**
 * Sends one request to every voter at once and decides as soon as `quorum` said yes or that can no
 * longer happen, without waiting for stragglers. Voters that have not answered within `timeoutMs`
 * count as unavailable (one time-out per round, not one per voter).
 */
export function quorumRound<R>(
  runtime: Runtime,
  voters: readonly Voter[],
  quorum: number,
  timeoutMs: number,
  send: (voter: Voter, index: number) => Promise<R>,
  classify: (reply: R, index: number) => Vote,
  options: RoundOptions<R> = {},
): Promise<RoundOutcome<R>> {
  return new Promise((resolve) => {
    const total = voters.length;
    const votes = new Array<'yes' | 'no' | 'declined' | 'failed' | undefined>(total);
    const yes: Array<{ index: number; reply: R }> = [];
    const no: R[] = [];
    const unavailable: NodeFailure[] = [];
    let decided = false;
    const record = (index: number, outcome: () => void) => {
      if (votes[index] !== undefined || decided) return;
      outcome();
      const failed = no.length + unavailable.length;
      if (yes.length >= quorum || failed > total - quorum || yes.length + failed === total) {
        decided = true;
        cancel();
        resolve({ ok: yes.length >= quorum, yes, no, unavailable, votes });
      }
    };
    const fail = (index: number, reason: string, vote: 'declined' | 'failed') => {
      votes[index] = vote;
      unavailable.push({ node: voters[index]!.label, reason });
    };
    // When the timer fires, replies may already wait in the sockets (timers run before I/O is
    // read, e.g. after a busy tick): look at them first, then expire what is still missing.
    const cancel = runtime.setTimeout(
      () =>
        runtime.defer(() => {
          for (let i = 0; i < total; i++)
            record(i, () => fail(i, `no reply within ${timeoutMs} ms`, 'failed'));
        }),
      timeoutMs,
    );
    const { observe } = options;
    voters.forEach((voter, index) => {
      send(voter, index).then(
        (reply) => {
          observe?.(index, reply);
          record(index, () => {
            const vote = classify(reply, index);
            if (vote === 'yes') {
              votes[index] = 'yes';
              yes.push({ index, reply });
            } else if (vote === 'no') {
              votes[index] = 'no';
              no.push(reply);
            } else fail(index, vote.declined, 'declined');
          });
        },
        (err: unknown) => {
          observe?.(index, undefined);
          record(index, () => fail(index, voter.failureReason(err), 'failed'));
        },
      );
    });
  });
}
