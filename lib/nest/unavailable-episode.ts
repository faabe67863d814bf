import type { Logger } from '@nestjs/common';
import type { QuorumUnavailableError } from '../core/index.js';

/**
 * What an `onBusy: 'skip'` method logs while the lock quorum is unavailable: one warning when the
 * episode starts (with the reason: every node and why it failed), one line when a later call
 * reaches the quorum again (how long it lasted, how many runs were skipped), nothing per run in
 * between. A scheduled job whose nodes are down for a minute would otherwise log an error with a
 * stack trace every tick, burying the one line that says what is wrong.
 */
export class UnavailableEpisode {
  private startedAt: number | undefined;
  private skippedRuns = 0;

  constructor(
    private readonly where: string,
    private readonly log: Logger,
  ) {}

  /** A run skipped because the quorum is unavailable. */
  skip(err: QuorumUnavailableError): void {
    this.skippedRuns++;
    if (this.startedAt !== undefined) return;
    this.startedAt = performance.now();
    this.log.warn(
      `${this.where} is skipped while the lock quorum is unavailable (onBusy: 'skip'); ` +
        `one line will say when it is back. ${err.message}`,
    );
  }

  /** A call reached the quorum (it ran, or found the lock busy): ends an episode in progress. */
  reached(): void {
    if (this.startedAt === undefined) return;
    const seconds = ((performance.now() - this.startedAt) / 1000).toFixed(1);
    this.log.log(
      `${this.where}: the lock quorum is available again after ${seconds} s; ${this.skippedRuns} run(s) were skipped.`,
    );
    this.startedAt = undefined;
    this.skippedRuns = 0;
  }
}
