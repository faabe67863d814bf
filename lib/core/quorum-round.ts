import type { NodeFailure } from './errors.js';
import type { LockNode } from './lock-node.js';
import { startTimeout, type CancelTimeout } from './timeouts.js';

/** Options of a round. */
export interface RoundOptions<R> {
  /**
   * Start the time-out when this settles instead of now: for requests that are queued and sent
   * together later in the tick (batched extensions), so a long tick does not eat the budget.
   */
  readonly armAfter?: Promise<unknown>;
  /**
   * Sees every node's outcome, also those that come after the decision: its reply, or undefined
   * when the command failed (not when the round stopped waiting for it).
   */
  readonly observe?: (index: number, reply: R | undefined) => void;
}

/** How one node's reply counts toward the decision. */
export type Vote = 'yes' | 'no' | 'unavailable';

/** The decision of one round, taken as soon as it was certain. */
export interface RoundOutcome<R> {
  /** A majority voted yes. */
  readonly ok: boolean;
  /** Replies that voted yes, with the node index, in arrival order. */
  readonly yes: ReadonlyArray<{ readonly index: number; readonly reply: R }>;
  /** Replies that voted no (e.g. lock busy), in arrival order. */
  readonly no: readonly R[];
  /** Nodes that failed, timed out or abstained, with log-safe reasons. */
  readonly unavailable: readonly NodeFailure[];
  /**
   * Per node index: what it answered before the decision. `declined` is an answer that did not
   * vote (e.g. abstaining); `failed` an error or time-out; undefined no answer yet.
   */
  readonly votes: ReadonlyArray<'yes' | 'no' | 'declined' | 'failed' | undefined>;
}

/**
 * Sends one request to every node at once and decides as soon as a majority said yes or a
 * majority can no longer be reached, without waiting for stragglers. Nodes that have not answered
 * within `timeoutMs` count as unavailable (one time-out per round, not one per node).
 * `classify` may return a failure reason instead of a vote (e.g. an abstaining node).
 */
export function quorumRound<R>(
  nodes: readonly LockNode[],
  quorum: number,
  timeoutMs: number,
  send: (node: LockNode) => Promise<R>,
  classify: (reply: R, node: LockNode) => Vote | { unavailable: string },
  options: RoundOptions<R> = {},
): Promise<RoundOutcome<R>> {
  return new Promise((resolve) => {
    const total = nodes.length;
    const votes = new Array<'yes' | 'no' | 'declined' | 'failed' | undefined>(total);
    const yes: Array<{ index: number; reply: R }> = [];
    const no: R[] = [];
    const unavailable: NodeFailure[] = [];
    let decided = false;

    const decide = () => {
      if (decided) return;
      const failed = no.length + unavailable.length;
      const answered = yes.length + failed;
      const certain = yes.length >= quorum || failed > total - quorum || answered === total;
      if (certain) finish();
    };
    const finish = () => {
      if (decided) return;
      decided = true;
      cancel?.();
      resolve({ ok: yes.length >= quorum, yes, no, unavailable, votes });
    };
    const record = (index: number, outcome: () => void) => {
      if (votes[index] !== undefined || decided) return;
      outcome();
      decide();
    };

    const expire = () => {
      for (let i = 0; i < total; i++) {
        record(i, () => {
          votes[i] = 'failed';
          unavailable.push({ node: nodes[i]!.label, reason: `no reply within ${timeoutMs} ms` });
        });
      }
    };
    // When the timer fires, replies may already wait in the sockets (timers run before I/O is
    // read, e.g. after a busy tick): look at them first, then expire what is still missing.
    const onTimeout = () => setImmediate(expire);
    let cancel: CancelTimeout | undefined;
    const arm = () => {
      if (!decided) cancel = startTimeout(timeoutMs, onTimeout);
    };
    // Writes to a node leave together at the end of the tick (LockNode corks the socket): start
    // the clock then, so synchronous work after the call (a long handler, a GC pause) is not
    // counted against the nodes.
    if (options.armAfter) void options.armAfter.then(arm);
    else process.nextTick(arm);

    const { observe } = options;
    nodes.forEach((node, index) => {
      send(node).then(
        (reply) => {
          observe?.(index, reply);
          record(index, () => {
            const vote = classify(reply, node);
            if (vote === 'yes') {
              votes[index] = 'yes';
              yes.push({ index, reply });
            } else if (vote === 'no') {
              votes[index] = 'no';
              no.push(reply);
            } else {
              votes[index] = 'declined';
              unavailable.push({
                node: node.label,
                reason: vote === 'unavailable' ? 'unavailable' : vote.unavailable,
              });
            }
          });
        },
        (err: unknown) => {
          observe?.(index, undefined);
          record(index, () => {
            votes[index] = 'failed';
            unavailable.push({ node: node.label, reason: node.failureReason(err) });
          });
        },
      );
    });
  });
}
