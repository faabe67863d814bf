import type { RedlockLogger } from '../logger.js';
import type { Preflight } from '../preflight.js';
import { settleWithin, TIMED_OUT, type Runtime } from '../runtime.js';
import { decodeIdentityReply, fenceCounterPattern, IDENTITY_CHECK, RUN_ID } from '../scripts/guards.js';
import { IDENTITY_SUFFIX } from '../scripts/keys.js';
import type { Route, Transport } from '../transport/transport.js';
import { missingAclRules } from '../voter/acl-probe.js';
import { ensureFunctions, functionsFinding, FunctionsNotLoadedError } from '../voter/functions.js';
import { describeError, isFinalFault, nodeFault } from '../voter/describe-error.js';
import {
  checkServer,
  describeSoftware,
  readServerFacts,
  runScript,
  trustedAcrossRestarts,
  type Finding,
  type ScriptMode,
  type ServerFacts,
  type ServerSoftware,
} from '../voter/server.js';

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
interface Shard {
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
 * the same connection, and its shards' run_ids surveyed once a second.
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
    const pending = this.admit(shard, state).then(
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

  /** Reads, reviews and checks the server behind `shard`; resolves the ms it abstains (recorded). */
  private async admit(shard: string, state: Shard): Promise<number> {
    const { settings, transport, voter } = this;
    const { keyPrefix, wakeChannel } = settings;
    const send = (command: readonly string[]) => transport.send({ shard }, command);
    const label = shard === '' ? voter.label : `${voter.label} (shard ${shard})`;
    // Functions: loaded here, on the shard's new connection, before anything calls them (beside
    // the reads of the server's facts: no round trip more before the shard votes).
    const functions = settings.scripts === 'functions' ? this.functions(send) : undefined;
    functions?.catch(() => undefined); // when the facts fail first, the check fails with them
    let facts = await readServerFacts(settings.runtime, send, transport.username, settings.timeoutMs);
    if (this.closed) throw new Error('the engine closed');
    const unloaded = await functions;
    if (settings.preflight) {
      const pattern = wakeChannel.replace(/[^:]*$/, '*');
      // Bounded like every read of the check: a command on a connection that closed under it (a
      // Cluster re-forming) may never settle, and the check would then never end nor be retried.
      const probe = unloaded
        ? Promise.resolve([])
        : missingAclRules(send, keyPrefix, pattern, wakeChannel, settings.scripts);
      const missing = await settleWithin(settings.runtime, probe, settings.timeoutMs);
      if (missing === TIMED_OUT) throw new Error(`no reply to the ACL probe within ${settings.timeoutMs} ms`);
      facts = { ...facts, denied: [...new Set([...facts.denied, ...missing])] };
      const findings: Finding[] = checkServer(
        transport.clustered ? { ...facts, clusterEnabled: undefined, redisMode: undefined } : facts,
      );
      if (unloaded) findings.push(functionsFinding(unloaded, transport.username));
      const refusal = settings.preflight.review(state, voter, label, {
        serverId: facts.runId,
        server: describeSoftware([facts.software]),
        findings,
      });
      if (refusal) {
        state.refused = true;
        state.reason = refusal.message;
        throw new Error(refusal.message);
      }
    }
    if (unloaded) throw unloaded;
    const abstainMs = await this.identity(send, label, facts, state, shard);
    state.runId = facts.runId;
    state.software = facts.software;
    if (abstainMs > 0) state.abstainUntil = settings.runtime.now() + abstainMs;
    return abstainMs;
  }

  /** Makes sure the server has the FUNCTION library; the refusal to load it, as preflight reports it. */
  private async functions(send: (command: readonly string[]) => Promise<unknown>) {
    const { runtime, timeoutMs } = this.settings;
    const ensured = await settleWithin(
      runtime,
      ensureFunctions(send).then(() => undefined, denied),
      timeoutMs,
    );
    if (ensured === TIMED_OUT) throw new Error(`no reply to FCALL_RO / FUNCTION LOAD within ${timeoutMs} ms`);
    return ensured;
  }

  /**
   * The identity check: how long `shard` abstains. At least the guard when this voter itself saw the
   * run_id change (another client may have updated the record first), unless the new server is
   * trusted across restarts; an abstention that still runs is never shortened.
   */
  private async identity(
    send: (command: readonly string[]) => Promise<unknown>,
    label: string,
    facts: ServerFacts,
    state: Shard,
    shard: string,
  ): Promise<number> {
    const { guardMs, logger, runtime, timeoutMs } = this.settings;
    if (guardMs <= 0) return 0;
    if (!facts.runId) {
      logger.warn(
        `Redis node ${label}: the identity guard is off for this node: INFO is denied to its ACL user, so a ` +
          'restart or failover that lost the newest writes cannot be told. Grant +info (see "Deploying safely").',
      );
      return 0;
    }
    const marker = this.settings.markerOf(shard);
    const trusted = trustedAcrossRestarts(facts);
    const args = [
      facts.runId,
      trusted ? '1' : '0',
      String(Math.ceil(guardMs)),
      fenceCounterPattern(this.settings.keyPrefix),
    ];
    const call = runScript(send, IDENTITY_CHECK, [marker, marker + IDENTITY_SUFFIX], args, {
      mode: this.settings.scripts,
      bySource: true,
    });
    const reply = await settleWithin(runtime, call, timeoutMs);
    if (reply === TIMED_OUT) throw new Error(`no reply to the identity check within ${timeoutMs} ms`);
    const check = decodeIdentityReply(reply);
    const sawChange = state.runId !== undefined && state.runId !== facts.runId && !trusted;
    const running = Math.max(0, state.abstainUntil - runtime.now());
    const abstainMs = Math.max(check.abstainMs, sawChange ? guardMs : 0, running);
    if (abstainMs > running) {
      const why =
        check.outcome === 'changed' || sawChange
          ? changedReason(check.previous, facts, check.countersDropped)
          : '';
      this.settings.onAbstention(shard, abstainMs, why);
    }
    return abstainMs;
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

/** A library that could not be loaded is a finding; anything else fails the check. */
function denied(err: unknown): FunctionsNotLoadedError {
  if (err instanceof FunctionsNotLoadedError) return err;
  throw err;
}

/** Why a node whose server changed abstains, for the log line and the 'node-abstaining' event. */
function changedReason(previous: string, facts: ServerFacts, dropped: number): string {
  const persistence =
    facts.appendonly === 'yes' ? `appendonly yes, appendfsync ${facts.appendfsync ?? '?'}` : 'appendonly no';
  const promoted = (facts.secondReplOffset ?? -1) >= 0 ? ', a replica promoted by a failover' : '';
  const short = (runId: string) => (runId.length > 8 ? `${runId.slice(0, 8)}…` : runId || '?');
  return (
    `its server is not the one that wrote its restart-guard marker (run_id ${short(previous)} then, ` +
    `${short(facts.runId ?? '')} now${promoted}; ${persistence}): a restart or failover may have lost its ` +
    `newest lock keys and fencing counters (${dropped} counters dropped: they start again from the ` +
    'clock; only appendonly yes + appendfsync always is trusted across restarts)'
  );
}
