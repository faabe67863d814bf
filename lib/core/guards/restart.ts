import type { LockEvents } from '../events.js';
import type { RedlockLogger } from '../logger.js';
import type { Runtime } from '../runtime.js';
import type { AbstainingVote } from '../scripts/acquire.js';
import type { Voter } from '../voter/voter-api.js';

/**
 * Voters that start to abstain within this many ms are logged in one line (every new node at
 * boot, the voters of one round).
 */
const ABSTENTION_BATCH_MS = 100;

/**
 * The restart guard, engine side: who abstains until when (the restart guard, a voter's identity
 * guard, the clock guard; the scripts decide on the nodes: scripts/fence.ts), and the log lines
 * about it: one per batch of voters that start to abstain together, and one when a quorum votes
 * again after abstentions left none. A Cluster voter's shard abstains for its own slots only: it is
 * logged and reported, but the voter as a whole still votes (status, health, hand-overs).
 */
export class Abstentions {
  /**
   * Per voter: until when it abstains, on this engine's monotonic clock (performance.now(); 0 = it
   * votes). Not the wall clock: a step of this machine's clock must neither end an abstention
   * early nor stretch it.
   */
  private readonly until: number[];
  /** Per voter: until when its latest reported abstention (a shard's too) runs: Retry-After. */
  private readonly latest: number[];
  /** Per voter: until when each of its shards abstains (a Cluster's), so that each is logged once. */
  private readonly shards: Array<Map<string, number>>;
  /** Voters that started to abstain and are not logged yet (see {@link logPending}). */
  private unlogged: Array<{ index: number; until: number; why: string | undefined }> = [];
  private unloggedTimer: (() => void) | undefined;
  /** Set while abstentions leave no quorum: the timer that logs its return. */
  private quorumReturn: { at: number; cancel: () => void } | undefined;

  constructor(
    private readonly list: readonly Voter[],
    private readonly quorum: number,
    private readonly restartGuard: number | false,
    private readonly logger: RedlockLogger,
    private readonly events: LockEvents,
    private readonly runtime: Runtime,
  ) {
    this.until = list.map(() => 0);
    this.latest = list.map(() => 0);
    this.shards = list.map(() => new Map());
  }

  /** Until when (runtime time) voter `index` abstains; 0 or a past time when it votes. */
  abstainsUntil(index: number): number {
    return this.until[index]!;
  }

  /** Until when the latest abstention voter `index` reported runs, a shard's included. */
  reportedUntil(index: number): number {
    return Math.max(this.until[index]!, this.latest[index]!);
  }

  /** Makes voter `index` abstain until at least `until` (performance.now), without a log line (the clock guard logs its own). */
  extend(index: number, until: number): void {
    this.until[index] = Math.max(this.until[index]!, until);
  }

  /**
   * Records the abstention a vote of voter `index` reported: the restart guard's, or that of a node
   * whose clock is too far behind the fence seed proposed to seed a counter it lost (the event's
   * cause is then `clock`, and the line says by how much). Returns the reason for error messages.
   */
  noteVote(index: number, vote: AbstainingVote): string {
    const behind = vote.clockBehindMs;
    if (behind === undefined) return this.note(index, vote.forMs, undefined, vote.shard);
    const why =
      `its wall clock is ${behind} ms behind the voters' time (the fence seed proposed), more than half ` +
      'the restart guard: it lost the fencing counter of a lock and will not seed one from that clock ' +
      '(tokens could go back); set its clock right (NTP)';
    this.note(index, vote.forMs, why, vote.shard, 'clock');
    return `abstaining: its wall clock is ${behind} ms behind the voters' time`;
  }

  /**
   * Records that voter `index` abstains under the restart guard for `remainingMs`, logs it once
   * per period (which node, why, until when: one line for the voters that start to abstain
   * together, e.g. every new node at boot), and returns the reason for error messages. `why`
   * replaces the restart guard's reason (no marker, or one still running) when the voter knows
   * better (`cause`: what the event names it). When the abstentions leave no quorum, one more line
   * says when a quorum votes again.
   */
  note(
    index: number,
    remainingMs: number,
    why?: string,
    shard?: string,
    cause: 'identity' | 'clock' = 'identity',
  ): string {
    const now = this.runtime.now();
    const until = now + remainingMs;
    const reason = `abstaining under the restart guard for ${Math.round(remainingMs)} more ms`;
    this.latest[index] = until;
    if (shard !== undefined) {
      // A Cluster's shard: its slots abstain, the voter votes for the others. Each of its votes
      // reports it: logged when it starts, or when it comes with a reason (the identity guard's).
      const was = this.shards[index]!.get(shard) ?? 0;
      this.shards[index]!.set(shard, Math.max(was, until));
      if (was < now || why) {
        const label = this.list[index]!.label;
        this.logger.warn(
          `Redis node ${label} (shard ${shard}) abstains for ${Math.round(remainingMs)} ms: ${why || 'restart guard'}.`,
        );
        this.emit(index, remainingMs, why, cause);
      }
      return reason;
    }
    if (this.until[index]! < now) {
      this.unlogged.push({ index, until, why });
      this.unloggedTimer ??= this.runtime.setTimeout(() => this.logPending(), ABSTENTION_BATCH_MS);
      this.emit(index, remainingMs, why, cause);
    }
    this.until[index] = until;
    this.watchQuorumReturn();
    return reason;
  }

  private emit(
    index: number,
    remainingMs: number,
    why: string | undefined,
    cause: 'identity' | 'clock',
  ): void {
    if (!this.events.observed) return;
    const node = this.list[index]!.label;
    this.events.emit({
      type: 'node-abstaining',
      resources: [],
      node,
      durationMs: remainingMs,
      reason: why,
      cause: why ? cause : 'restart',
    });
  }

  /** One line for the voters that started to abstain since the last one. */
  logPending(): void {
    this.unloggedTimer?.();
    this.unloggedTimer = undefined;
    const batch = this.unlogged;
    if (batch.length === 0) return;
    this.unlogged = [];
    const label = (i: number) => this.list[i]!.label;
    const iso = (at: number) => new Date(this.runtime.wallNow() + at - this.runtime.now()).toISOString();
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
      line += ` No lock can be granted until a quorum of ${this.quorum} of ${this.list.length} votes again, at ${iso(back)}.`;
    }
    if (plain.length > 0) {
      line +=
        ' Waiting is the safe choice: a node that restarted empty looks exactly like a new one, and locks it ' +
        'granted before it restarted may still be in use by its holder; once restartGuard has passed, every ' +
        'lock it may have forgotten has expired. Only for nodes created just now and still empty (a dev or test setup): ' +
        '`npx nest-quorum-lock fresh-node <url>` records them fresh, so they vote at once.';
    }
    this.logger.warn(line);
  }

  /** Stops the timers (the engine closes). */
  close(): void {
    this.unloggedTimer?.();
    this.quorumReturn?.cancel();
  }

  /**
   * When abstentions leave fewer than a quorum voting, arms one timer for when a quorum votes
   * again, which logs it (once per episode).
   */
  private watchQuorumReturn(): void {
    const now = this.runtime.now();
    const at = this.quorumVotesAt(now);
    if (at === now) return; // a quorum votes now
    if (this.quorumReturn?.at === at) return;
    this.quorumReturn?.cancel();
    this.quorumReturn = undefined;
    if (!Number.isFinite(at)) return; // it depends on voters that are down: nobody can tell when
    const cancel = this.runtime.setTimeout(
      () => {
        this.quorumReturn = undefined;
        this.logPending();
        const ready = this.runtime.now();
        if (this.quorumVotesAt(ready) === ready) {
          const voting = this.list.filter((v, i) => v.connected && this.until[i]! <= ready);
          this.logger.log(
            `A quorum of the Redis nodes votes again (${voting.length} of ${this.list.length}, ${this.quorum} needed): ` +
              'the restart guard has run out; locks can be granted.',
          );
        } else {
          this.watchQuorumReturn();
        }
      },
      at - now + 1,
    );
    this.quorumReturn = { at, cancel };
  }

  /**
   * When (performance.now) a quorum votes, as far as the abstentions tell: `now` when one does, the
   * quorum-th soonest end of an abstention otherwise (a voter that abstains counts from the end of
   * its abstention, one that votes from now, one that is down never).
   */
  private quorumVotesAt(now: number): number {
    const at = this.list
      .map((voter, i) => (this.until[i]! > now ? this.until[i]! : voter.connected ? now : Infinity))
      .sort((a, b) => a - b);
    return at[this.quorum - 1]!;
  }
}
