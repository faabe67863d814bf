import type { RedlockLogger } from '../logger.js';
import type { Preflight } from '../preflight.js';
import { settleWithin, type Runtime } from '../runtime.js';
import { RUN_ID } from '../scripts/guards.js';
import type { Route, Transport } from '../transport/transport.js';
import { describeError, isFinalFault, nodeFault } from '../voter/describe-error.js';
import { runScript } from '../voter/send.js';
import { describeSoftware, type ScriptMode, type ServerSoftware } from '../voter/server.js';
import { admitShard } from './shard-admission.js';

/** A vote ran on a connection, or a server, that was not the one checked: it must not count. */
export class ServerChangedError extends Error {
  constructor() {
    super('the connection changed under this call: the new one is checked before it votes');
    this.name = 'ServerChangedError';
  }
}

/** How soon a failed check (a time-out, a replica refusing a write) is tried again, ms. */
const RETRY_MS = 1000;
/** How often a transport that does not see reconnections has its shards' run_ids read, ms. */
const SURVEY_MS = 1000;

/** What the identity guard is built with. */
export interface IdentitySettings {
  readonly runtime: Runtime;
  readonly logger: RedlockLogger;
  /** restartGuard in ms (0: off, and so is the identity guard). */
  readonly guardMs: number;
  /** Bound on one shard's check. */
  readonly timeoutMs: number;
  /** Undefined when preflight is off. */
  readonly preflight: Preflight | undefined;
  /** How scripts are called (the option `scripts`). */
  readonly scripts: ScriptMode;
  /** The wake channels' pattern and one channel, for the ACL probe. */
  readonly wakeChannel: string;
  /** The key prefix (the ACL probe's keys). */
  readonly keyPrefix: string;
  /** The restart-guard marker beside which `shard`'s identity record sits. */
  markerOf(shard: string): string;
  /** Hears a shard that starts to abstain ('' why: the restart guard's own reason). */
  onAbstention(shard: string, forMs: number, why: string): void;
  /** Loads the lock's scripts on `shard`'s new connection. */
  prepare(shard: string): void;
  /** Hears a check that failed (logged once per kind of fault by the voter). */
  onCheckFailed(err: unknown): void;
}

/** One shard: the server its current connection reaches, as far as it was checked. */
export interface Shard {
  /** The epoch the shard was checked on; undefined until a check passed. */
  checked: number | undefined;
  runId: string | undefined;
  /** What the server said it is (INFO server) at its latest check. */
  software: ServerSoftware | undefined;
  /** Runtime time until which it abstains (0: it votes). */
  abstainUntil: number;
  pending: Promise<void> | undefined;
  /** Why it does not vote now (not checked, a failed check, preflight's refusal). */
  reason: string | undefined;
  /** Preflight refused it: final until its next connection. */
  refused: boolean;
  /** A retry of a failed check is scheduled (one at a time, however many votes asked meanwhile). */
  retrying: boolean;
}

/**
 * The identity guard and preflight of one voter, per shard (a single server is one shard): before a
 * shard votes, the server behind its current connection is read (preflight reviews it) and checked
 * against the identity record beside its restart-guard marker (scripts/guards.ts). A server that is
 * not the one that wrote the record (a restart that kept its data, a promoted replica) abstains for
 * the restart guard, counters dropped. Fed by the transport: a new connection changes the shard's
 * epoch ('connected'), and a vote counts only when it went and came back on the epoch checked. A
 * transport that does not see reconnections (GLIDE) has the run_id read right behind every vote, on
 * the same connection, and its shards' run_ids surveyed once a second. What a check reads and
 * compares is shard-admission.ts.
 */
export class IdentityGuard {
  private readonly shards = new Map<string, Shard>();
  private survey: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly voter: { readonly label: string }, // preflight's findings are the voter's
    private readonly settings: IdentitySettings,
  ) {
    transport.on((event) => {
      if (event.type === 'connected') void this.check(event.shard);
      else if (event.type === 'up') this.checkUnchecked();
    });
    if (!transport.seesReconnects && settings.guardMs > 0) this.scheduleSurvey();
  }

  /** Why `shard` does not vote now (undefined: it may), with the check to wait for when one runs. */
  readiness(shard: string): { reason: string | undefined; pending: Promise<void> | undefined } {
    const state = this.shards.get(shard) ?? this.startCheck(shard);
    const current = state.checked !== undefined && state.checked === this.transport.epoch(shard);
    if (current && !state.refused) return { reason: undefined, pending: undefined };
    // Down: its next connection is checked when it comes ('connected'), not a failed check now.
    if (!this.transport.up)
      return { reason: this.transport.lastError ?? 'not connected', pending: undefined };
    if (!current && !state.pending && !state.refused) void this.check(shard);
    const reason = state.reason ?? 'connected; checking the server before it votes';
    return { reason, pending: state.pending };
  }

  /** The ms `shard` abstains for from now (0: it votes). */
  abstainingForMs(shard: string): number {
    const until = this.shards.get(shard)?.abstainUntil ?? 0;
    return until === 0 ? 0 : Math.max(0, until - this.settings.runtime.now());
  }

  /** The checks in flight, if any. */
  get checking(): Promise<void> | undefined {
    const pending = [...this.shards.values()].flatMap((s) => (s.pending ? [s.pending] : []));
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
  }

  /** What the servers said they are at their latest checks (`Valkey 8.0.1`; a Cluster: each distinct one). */
  software(): string | undefined {
    return describeSoftware([...this.shards.values()].map((s) => s.software));
  }

  /** The run_ids of the servers behind the shards, as checked: one server behind two voters shares one. */
  serverIds(): string[] {
    return [...this.shards.values()].flatMap((s) => (s.runId ? [s.runId] : []));
  }

  /** Whether every shard known was refused by preflight (the voter does not vote at all). */
  refusal(): string | undefined {
    for (const state of this.shards.values()) if (state.refused) return state.reason;
    return undefined;
  }

  /**
   * Sends a vote of `shard` (`send`, by `route`) and resolves with its reply once it is known to come
   * from the server checked when it went out: the same epoch before and after, or the run_id read right
   * behind it by the same route. Rejects with ServerChangedError otherwise (a check then starts).
   */
  confirm<T>(shard: string, send: () => Promise<T>, route: Route = { shard }): Promise<T> {
    const state = this.shards.get(shard);
    const [epoch, checkedRunId] = [this.transport.epoch(shard), state?.runId];
    if (this.settings.guardMs <= 0 || !state || !checkedRunId) return send();
    if (this.transport.seesReconnects) {
      return send().then((reply) => {
        if (this.transport.epoch(shard) === epoch && state.checked === epoch) return reply;
        throw new ServerChangedError();
      });
    }
    const mode = this.settings.scripts;
    const readRunId = () => runScript((c) => this.transport.send(route, c), RUN_ID, [], [], { mode });
    return Promise.all([send(), readRunId()]).then(([reply, id]) => {
      if (String(id) === checkedRunId) return reply;
      void this.check(shard, true);
      throw new ServerChangedError();
    });
  }

  /**
   * A transport up again (a Cluster that lost all its masters): every shard not checked on its current
   * connection is checked now. A Cluster client connects a master on its first command, so a shard
   * that no vote asks for would otherwise stay unchecked, its restart unreported, until its next vote.
   */
  private checkUnchecked(): void {
    for (const shard of this.transport.shards().keys()) {
      const state = this.shards.get(shard);
      if (!state) this.startCheck(shard);
      else if (state.checked !== this.transport.epoch(shard) && !state.pending) void this.check(shard);
    }
  }

  /** Stops the survey and the retries; waits for the checks in flight, at most `timeoutMs`. */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.survey?.();
    const pending = this.checking;
    if (pending) await settleWithin(this.settings.runtime, pending, timeoutMs);
  }

  private startCheck(shard: string): Shard {
    const state: Shard = {
      checked: undefined,
      runId: undefined,
      software: undefined,
      abstainUntil: 0,
      pending: undefined,
      reason: undefined,
      refused: false,
      retrying: false,
    };
    this.shards.set(shard, state);
    if (this.transport.up) void this.check(shard);
    return state;
  }

  /**
   * Checks `shard`'s server on its current connection (again when it reconnects meanwhile); `changed`
   * (a run_id other than the one checked was read): unchecked until a check that starts after it.
   */
  private check(shard: string, changed = false): Promise<void> {
    const state = this.shards.get(shard) ?? this.startCheck(shard);
    if (changed) state.checked = undefined;
    if (changed && state.pending) return state.pending.then(() => this.check(shard, true));
    if (state.pending || this.closed) return state.pending ?? Promise.resolve();
    state.refused = false;
    const epoch = this.transport.epoch(shard);
    const admitted = admitShard(this.transport, this.voter, this.settings, shard, state, () => this.closed);
    const pending = admitted.then(
      () => {
        state.pending = undefined;
        if (this.transport.epoch(shard) !== epoch) return this.check(shard);
        state.checked = epoch;
        state.reason = undefined;
        return this.settings.prepare(shard);
      },
      (err: unknown) => {
        state.pending = undefined;
        // Refused by preflight: it does not vote on this connection (its next one is checked anew).
        if (this.closed || state.refused) return;
        this.settings.onCheckFailed(err);
        const final = isFinalFault(nodeFault(err));
        // A refusal (ACL) is reported as itself; anything else happened on a live connection.
        state.reason = final
          ? describeError(err)
          : `connected, but the server could not be checked: ${describeError(err)}`;
        if (state.retrying) return;
        state.retrying = true;
        const retry = () => {
          state.retrying = false;
          void this.check(shard);
        };
        this.settings.runtime.setTimeout(retry, final ? 5 * RETRY_MS : RETRY_MS);
      },
    );
    state.pending = pending;
    return pending;
  }

  /** A transport that does not see reconnections: its shards' run_ids, read once a second. */
  private scheduleSurvey(): void {
    this.survey = this.settings.runtime.setTimeout(() => {
      void Promise.all(
        [...this.shards].map(async ([shard, state]) => {
          if (state.pending || !this.transport.up) return;
          const info = await this.transport.send({ shard }, ['INFO', 'server']).catch(() => undefined);
          const runId = /run_id:(\w+)/.exec(String(info ?? ''))?.[1];
          if (runId !== undefined && runId !== state.runId) await this.check(shard, true);
        }),
      ).finally(() => {
        if (!this.closed) this.scheduleSurvey();
      });
    }, SURVEY_MS);
  }
}
