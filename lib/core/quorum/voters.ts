import type { LockEvents } from '../events.js';
import type { LetGo } from '../scripts/index.js';
import type { RedlockLogger } from '../logger.js';
import { settleWithin, startTimeout, TIMED_OUT } from '../timeouts.js';
import { quorumOf, quorumRound, type RoundOptions, type RoundOutcome, type Vote } from './quorum-round.js';
import type { Voter } from '../voter/voter.js';
import type { WriteWindow } from '../voter/write-batching.js';

/**
 * Voters that start to abstain within this many ms are logged in one line (every new node at
 * boot, the voters of one round).
 */
const ABSTENTION_BATCH_MS = 100;

/** Every answer, or failure, of a voter letting go counts as done (see Voters.letGo). */
const countsAsDone = (): 'yes' => 'yes';
const ignore = (): undefined => undefined;

/** Reachability of one voter, as reported by `Redlock.connect`, `status` and `probe`. */
export interface NodeStatus {
  readonly node: string;
  readonly reachable: boolean;
  readonly error?: string;
  /** Epoch ms until which the node abstains under the restart guard, if it does. */
  readonly abstainingUntil?: number;
  /** Round-trip time of a PING, from `probe`. */
  readonly latencyMs?: number;
}

/**
 * The N voters as one: the quorum (computed here only), rounds over all of them, their health
 * (connect, status, probe), who abstains under the restart guard until when, and letting go of
 * keys everywhere.
 */
export class Voters {
  /** Votes needed: a strict majority of the voters. */
  readonly quorum: number;
  /** Per voter: epoch ms until which it abstains (0 = it votes). */
  private readonly abstaining: number[];

  constructor(
    readonly list: readonly Voter[],
    private readonly nodeTimeout: number,
    private readonly restartGuard: number | false,
    private readonly logger: RedlockLogger,
    private readonly events: LockEvents,
    /** The engine's write batching window (its voters' too): when a release's writes have left. */
    private readonly writes: WriteWindow,
  ) {
    this.quorum = quorumOf(list.length);
    this.abstaining = list.map(() => 0);
    list.forEach((voter, index) => {
      // The identity guard (voter/ioredis/admission.ts) decides on connecting, before any acquire.
      voter.onAbstention?.((forMs, why) => this.noteAbstention(index, forMs, why || undefined));
      voter.onHealthChange((up, reason) => {
        if (!events.observed) return;
        events.emit({ type: up ? 'node-up' : 'node-down', resources: [], node: voter.label, reason });
      });
    });
    if (list.length % 2 === 0) {
      logger.warn(
        `${list.length} Redis nodes configured: an even count tolerates no more failures than ` +
          `${list.length - 1} nodes would (quorum ${this.quorum}). Use an odd number such as 3 or 5.`,
      );
    }
  }

  get count(): number {
    return this.list.length;
  }

  /** One round over every voter (or `voters`, with their own `quorum`), bounded by nodeTimeout. */
  round<R>(
    send: (voter: Voter, index: number) => Promise<R>,
    classify: (reply: R, index: number) => Vote,
    options?: RoundOptions<R> & { voters?: readonly Voter[]; quorum?: number; timeoutMs?: number },
  ): Promise<RoundOutcome<R>> {
    return quorumRound(
      options?.voters ?? this.list,
      options?.quorum ?? this.quorum,
      options?.timeoutMs ?? this.nodeTimeout,
      send,
      classify,
      options,
    );
  }

  /**
   * Lets go of `value`'s keys on the voters `on` (default all). A voter that can send it one-way
   * (no reply: voter/one-way.ts) does, unless `confirmed`, and counts as done once the bytes are
   * handed to its socket (at once, or when the tick's corked writes leave: write-batching.ts): what
   * this engine sends the voter later goes on the same connection, so it comes after. The others
   * are waited for until, with those, a majority is done, like an acquire. A voter that fails to
   * answer still counts as done: the key expires there with its lease, and the next operation of
   * this engine reaches it after this one, on the same connection.
   */
  letGo(
    keys: readonly string[],
    value: string,
    how: LetGo,
    { on: voters = this.list, confirmed = false }: { on?: readonly Voter[]; confirmed?: boolean } = {},
  ): Promise<unknown> {
    let replying: Voter[] | undefined;
    for (const voter of voters) {
      if (confirmed || !voter.letGoOneWay?.(keys, value, how)) (replying ??= []).push(voter);
    }
    if (!replying) return this.writes.handedOver();
    const needed = Math.min(this.quorum, voters.length) - (voters.length - replying.length);
    const send = (voter: Voter) => voter.letGo(keys, value, how).catch(ignore);
    if (needed <= 0) {
      for (const voter of replying) void send(voter);
      return this.writes.handedOver();
    }
    return quorumRound(replying, needed, this.nodeTimeout, send, countsAsDone);
  }

  /**
   * Records that voter `index` abstains under the restart guard for `remainingMs`, logs it once
   * per period (which node, why, until when: one line for the voters that start to abstain
   * together, e.g. every new node at boot), and returns the reason for error messages. `why`
   * replaces the restart guard's reason (no marker, or one still running) when the voter knows
   * better. When the abstentions leave no quorum, one more line says when a quorum votes again.
   */
  noteAbstention(index: number, remainingMs: number, why?: string): string {
    const now = Date.now();
    const until = now + remainingMs;
    if (this.abstaining[index]! < now) {
      this.unlogged.push({ index, until, why });
      this.unloggedTimer ??= startTimeout(ABSTENTION_BATCH_MS, () => this.logAbstentions());
      if (this.events.observed) {
        const node = this.list[index]!.label;
        this.events.emit({
          type: 'node-abstaining',
          resources: [],
          node,
          durationMs: remainingMs,
          reason: why,
        });
      }
    }
    this.abstaining[index] = until;
    this.watchQuorumReturn();
    return `abstaining under the restart guard for ${remainingMs} more ms`;
  }

  /** Voters that started to abstain and are not logged yet (see {@link logAbstentions}). */
  private unlogged: Array<{ index: number; until: number; why: string | undefined }> = [];
  private unloggedTimer: (() => void) | undefined;
  /** Set while abstentions leave no quorum: the timer that logs its return. */
  private quorumReturn: { at: number; cancel: () => void } | undefined;

  /** One line for the voters that started to abstain since the last one. */
  private logAbstentions(): void {
    this.unloggedTimer?.();
    this.unloggedTimer = undefined;
    const batch = this.unlogged;
    if (batch.length === 0) return;
    this.unlogged = [];
    const label = (i: number) => this.list[i]!.label;
    const iso = (ms: number) => new Date(ms).toISOString();
    const guard = `restartGuard ${String(this.restartGuard)} ms`;
    const parts: string[] = [];
    // The restart guard's own reason (no marker, or one still running): one clause for all of them.
    const plain = batch.filter((a) => a.why === undefined);
    if (plain.length > 0) {
      const one = plain.length === 1;
      const until = Math.max(...plain.map((a) => a.until));
      parts.push(
        `Redis ${one ? 'node' : 'nodes'} ${plain.map((a) => label(a.index)).join(', ')} ` +
          `${one ? 'abstains' : 'abstain'} from lock quorums until ${iso(until)}: ` +
          `${one ? 'it has' : 'they have'} no restart-guard marker, or one still running (new, or restarted ` +
          `without persistence, failed over or flushed), so ${one ? 'it' : 'they'} may have forgotten locks ` +
          `${one ? 'it' : 'they'} granted (${guard})`,
      );
    }
    for (const a of batch) {
      if (a.why === undefined) continue;
      parts.push(
        `Redis node ${label(a.index)} abstains from lock quorums until ${iso(a.until)}: ${a.why} (${guard})`,
      );
    }
    let line = `${parts.join('; ')}.`;
    const back = this.quorumReturn?.at;
    if (back !== undefined) {
      line += ` No lock can be granted until a quorum of ${this.quorum} of ${this.count} votes again, at ${iso(back)}.`;
    }
    if (plain.length > 0) {
      line +=
        ' Nodes created just now cannot have granted anything: start once with `restartGuard: false` ' +
        '(e.g. `RedlockModule.forRoot({ nodes, restartGuard: false })`), which marks them trusted for later ' +
        'runs; never for nodes that can restart without persistence.';
    }
    this.logger.warn(line);
  }

  /**
   * When abstentions leave fewer than a quorum voting, arms one timer for when a quorum votes
   * again, which logs it (once per episode).
   */
  private watchQuorumReturn(): void {
    const now = Date.now();
    const at = this.quorumVotesAt(now);
    if (at === now) return; // a quorum votes now
    if (this.quorumReturn?.at === at) return;
    this.quorumReturn?.cancel();
    this.quorumReturn = undefined;
    if (!Number.isFinite(at)) return; // it depends on voters that are down: nobody can tell when
    const cancel = startTimeout(at - now + 1, () => {
      this.quorumReturn = undefined;
      this.logAbstentions();
      const ready = Date.now();
      if (this.quorumVotesAt(ready) === ready) {
        const voting = this.list.filter((v, i) => v.connected && this.abstaining[i]! <= ready);
        this.logger.log(
          `A quorum of the Redis nodes votes again (${voting.length} of ${this.count}, ${this.quorum} needed): ` +
            'the restart guard has run out; locks can be granted.',
        );
      } else {
        this.watchQuorumReturn();
      }
    });
    this.quorumReturn = { at, cancel };
  }

  /**
   * Epoch ms at which a quorum votes, as far as the abstentions tell: `now` when one does, the
   * quorum-th soonest end of an abstention otherwise (a voter that abstains counts from the end of
   * its abstention, one that votes from now, one that is down never).
   */
  private quorumVotesAt(now: number): number {
    const at = this.list
      .map((voter, i) => (this.abstaining[i]! > now ? this.abstaining[i]! : voter.connected ? now : Infinity))
      .sort((a, b) => a - b);
    return at[this.quorum - 1]!;
  }

  /**
   * When a quorum should vote again after a round that did not reach one, in ms from now: the
   * quorum-th soonest among the voters (0 for those that voted, the rest of its abstention for one
   * that abstained). Undefined when that depends on voters that failed or did not answer: nobody
   * can tell when they come back.
   */
  msUntilQuorumVotes(votes: RoundOutcome<unknown>['votes']): number | undefined {
    const now = Date.now();
    const waits = this.list
      .map((_, i) => {
        const vote = votes[i];
        if (vote === 'yes' || vote === 'no') return 0;
        return vote === 'declined' ? Math.max(0, this.abstaining[i]! - now) : Infinity;
      })
      .sort((a, b) => a - b);
    const wait = waits[this.quorum - 1]!;
    return Number.isFinite(wait) ? wait : undefined;
  }

  /**
   * Waits until every voter is connected, at most `timeoutMs` (a voter that refused the
   * credentials says so at once: nothing to wait for), and sums up those that are not in one
   * line; each voter already logged its own error, with what to fix, when it happened. Resolves
   * with each voter's status (it does not throw: a minority may well be down).
   */
  async connect(timeoutMs: number): Promise<NodeStatus[]> {
    await Promise.all(this.list.map((v) => v.waitReady(timeoutMs)));
    this.logAbstentions(); // the voters that abstain from boot, now rather than after the batch time
    const statuses = this.status();
    const down = statuses.filter((s) => !s.reachable);
    if (down.length === 0) return statuses;
    const connected = this.count - down.length;
    const which = down.map((s) => `${s.node} (${shortReason(s.error, timeoutMs)})`).join(', ');
    if (connected < this.quorum) {
      this.logger.error(
        `No quorum: ${connected} of ${this.count} Redis nodes connected, ${this.quorum} needed; no lock can be ` +
          `granted until ${this.quorum} are. Not connected: ${which}.`,
      );
    } else {
      this.logger.warn(
        `${down.length} of ${this.count} Redis nodes not connected (a quorum of ${this.quorum} is): ${which}.`,
      );
    }
    return statuses;
  }

  /** Current reachability of each voter, from the connections' state (no I/O). */
  status(): NodeStatus[] {
    const now = Date.now();
    return this.list.map((voter, i) => ({
      node: voter.label,
      reachable: voter.connected,
      ...(voter.connected ? {} : { error: voter.connectionError }),
      ...(this.abstaining[i]! > now ? { abstainingUntil: this.abstaining[i]! } : {}),
    }));
  }

  /**
   * Like {@link status}, but asks each voter (PING, bounded by nodeTimeout), so a voter that is
   * connected but hung (e.g. paused) shows as unreachable, and reachable ones report a latency.
   */
  probe(): Promise<NodeStatus[]> {
    const timeout = this.nodeTimeout;
    return Promise.all(
      this.status().map(async (status, i) => {
        if (!status.reachable) return status;
        const started = performance.now();
        const answer = await settleWithin(this.list[i]!.ping(), timeout).catch((err: unknown) => err);
        if (answer === undefined) {
          return { ...status, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
        }
        const error =
          answer === TIMED_OUT
            ? `no reply to PING within ${timeout} ms`
            : this.list[i]!.failureReason(answer);
        return { ...status, reachable: false, error };
      }),
    );
  }

  /** Closes every voter, each bounded by nodeTimeout. */
  async close(): Promise<void> {
    this.unloggedTimer?.();
    this.quorumReturn?.cancel();
    await Promise.all(this.list.map((v) => v.close(this.nodeTimeout)));
  }
}

/**
 * A voter's connection error in a few words, for the connect summary: what kind of failure (the
 * voter's own line has the details and the fix), or that it did not answer in time.
 */
function shortReason(error: string | undefined, timeoutMs: number): string {
  if (!error || /^(wait|connecting|connect|reconnecting)$/.test(error)) {
    return `no connection within connectTimeout ${timeoutMs} ms`;
  }
  return error.replace(/ \(.*$/s, '').replace(/: .*$/s, '');
}
