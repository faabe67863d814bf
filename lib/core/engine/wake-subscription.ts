import type { Runtime } from '../runtime.js';
import type { HandOff } from './hand-off.js';

/**
 * Why a wait ended: `handed` when a majority of voters handed the lock over, `woken` when it is
 * worth trying again (a turn came, or hand-overs stopped short of a majority).
 */
export type WakeReason = 'handed' | 'woken' | 'timeout' | 'aborted';

/**
 * One waiter's registration: wait for the lock, its turn or a timeout, as many times as needed.
 *
 * Every node hands the lock over (or announces the same turn) when the release reaches it. The
 * waiter is done when a majority has handed it the lock, and tries again when a majority has
 * announced its turn (the `quorum`-th announcement of one cause): woken by the first, it would try
 * while the others still hold the lock for the releaser, fail, and then sleep through its turn.
 * Hand-overs that stop short of a majority (another waiter was first on some nodes) wake it after
 * `graceMs`, to sort it out with an attempt.
 */
export class WakeSubscription {
  private resolveWait: ((reason: WakeReason) => void) | undefined;
  private pending: WakeReason | undefined;
  /** Announcements counted per cause. */
  private readonly heard = new Map<string, number>();
  /** Hand-overs by node index. */
  private readonly handOffs = new Map<number, HandOff>();
  private cancelGrace: (() => void) | undefined;

  constructor(
    private readonly quorum: number,
    private readonly onClose: () => void,
    private readonly graceMs: number,
    private readonly runtime: Runtime,
  ) {}

  /** A node gave us the turn; `cause` names the release (or departure) that did, '' if unknown. */
  wake(cause: string): void {
    if (cause !== '') {
      const count = (this.heard.get(cause) ?? 0) + 1;
      this.heard.set(cause, count);
      if (count !== this.quorum) return;
    }
    this.signal('woken');
  }

  /** A node handed us the lock. */
  handOff(handOff: HandOff): void {
    this.handOffs.set(handOff.node, handOff);
    if (this.handOffs.size >= this.quorum) {
      this.cancelGrace?.();
      this.signal('handed');
    } else if (!this.cancelGrace) {
      this.cancelGrace = this.runtime.setTimeout(() => this.signal('woken'), this.graceMs);
    }
  }

  /** The hand-overs received so far, one per node. */
  handedOver(): HandOff[] {
    return [...this.handOffs.values()];
  }

  /**
   * Resolves when handed the lock or woken, after `ms`, or when one of `signals` (the caller's, the
   * engine's shutdown) aborts, whichever is first.
   */
  wait(ms: number, ...signals: Array<AbortSignal | undefined>): Promise<WakeReason> {
    if (this.pending) {
      const reason = this.pending;
      this.pending = undefined;
      return Promise.resolve(reason);
    }
    if (signals.some((signal) => signal?.aborted)) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const done = (reason: WakeReason) => {
        cancel();
        for (const signal of signals) signal?.removeEventListener('abort', onAbort);
        this.resolveWait = undefined;
        resolve(reason);
      };
      const onAbort = () => done('aborted');
      const cancel = this.runtime.setTimeout(() => done('timeout'), ms);
      for (const signal of signals) signal?.addEventListener('abort', onAbort, { once: true });
      this.resolveWait = done;
    });
  }

  close(): void {
    this.cancelGrace?.();
    this.onClose();
  }

  private signal(reason: WakeReason): void {
    if (this.resolveWait) this.resolveWait(reason);
    // Told while an attempt is in flight: act on it at once after. A hand-over outranks a wake-up.
    else if (this.pending !== 'handed') this.pending = reason;
  }
}
