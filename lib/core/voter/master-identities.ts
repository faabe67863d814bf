import { settleWithin, startTimeout, TIMED_OUT } from '../timeouts.js';
import { describeError } from './describe-error.js';
import { ADMISSION_RETRY_MS, checkIdentity, type AdmissionSettings } from './ioredis/admission.js';
import { parseInfo, readServerFacts, trustedAcrossRestarts, type ServerFacts } from './ioredis/preflight.js';
import { keySlot, slotMarkerKey } from './ioredis-cluster/slots.js';
import type { ServerCommands } from './server-commands.js';

/** One master's state under the identity guard. */
interface Master {
  /** The run_id its server was checked with (undefined until a check passed). */
  runId: string | undefined;
  /** The check in flight, if any. */
  pending: Promise<void> | undefined;
  /** performance.now() until which the master's slots abstain (0: they vote). */
  abstainUntil: number;
  /** Why its slots may not vote yet (not checked), undefined once checked. */
  unchecked: string | undefined;
  /** Counts the checks started, so that a check superseded by a newer one changes nothing. */
  checks: number;
}

/** What a cluster adapter gives the guard: its masters now, and commands routed to one of them. */
export interface ClusterMasters {
  /** The masters, each with the slots it serves (from the client's slot map or CLUSTER SLOTS). */
  masters(): Promise<ReadonlyMap<string, readonly number[]>>;
  /** INFO, CONFIG GET and scripts on the master at `address`, each bounded by `timeoutMs`. */
  serverOf(address: string, timeoutMs: number): ServerCommands;
}

/**
 * The identity guard of a Redis Cluster voter whose client does not say when it reconnects
 * (node-redis `createCluster`, Valkey GLIDE `GlideClusterClient`), master by master, as
 * ioredis-cluster/shard-identities.ts does for ioredis from its connection events: a master whose
 * server changed (a restart, or a replica promoted by a failover) abstains for restartGuard on the
 * slots it serves, while the other masters vote.
 *
 * The server behind a master is told by its run_id. It is read (INFO server) when the adapter
 * surveys the masters (on connecting and once a second), and after every acquire on the same
 * connection as the acquire (the adapter's `confirm`): a master not seen before, or whose run_id is
 * not the one checked, runs IDENTITY_CHECK (scripts/identity.ts) beside the restart-guard marker of
 * the lowest slot it serves before its slots vote again; a grant from a server not checked yet does
 * not count (the voter lets go of it and votes again once checked: admitted-voter.ts).
 */
export class MasterIdentities {
  private readonly masters = new Map<string, Master>();
  /** The owner of each slot (its address), from the latest survey. */
  private owners: Array<string | undefined> = [];
  private uncheckedMasters = 0;
  /** The survey in flight, if any (a call waits for it, as for a check). */
  private surveying: Promise<void> | undefined;
  /** Until the first survey ended: a call waits for it. */
  private firstSurvey = true;
  /** A reply came from a server not checked for its slot: the survey in flight looks for it. */
  private changeSeen = false;
  /** After close(): no survey, check or retry any more. */
  private closed = false;
  /**
   * The last key whose slot was computed, and that slot: one acquire asks for the same lock key's
   * slot up to four times (uncheckedFor, abstainingForMs, checkedRunId, confirm), and keySlot
   * encodes the key and runs CRC16 each time.
   */
  private lastKey = '';
  private lastKeySlot = keySlot('');

  constructor(
    /** The voter's label (read when a line is logged: the adapter sets it after building this). */
    private readonly label: () => string,
    private readonly settings: AdmissionSettings,
    private readonly cluster: ClusterMasters,
    /** Hears a master that starts to abstain: how long, and why ('' for the restart guard's own reason). */
    private readonly onAbstention: (forMs: number, why: string) => void,
  ) {}

  /** Whether the guard runs at all (restartGuard on). */
  get on(): boolean {
    return this.settings.guardMs > 0;
  }

  /**
   * Stops surveying: no survey, check or retry starts after this (the engine closes), and the one
   * in flight stops at its next step; resolves once it has, at most `timeoutMs`, so that nothing of
   * ours reaches the client after the engine closed (a client passed in is closed by its owner next).
   */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    const inFlight = [this.surveying, ...[...this.masters.values()].map((master) => master.pending)];
    await settleWithin(Promise.all(inFlight), timeoutMs);
  }

  /**
   * The checks in flight (and the survey that may start one), if any: an acquire waits for them.
   * Starts a survey when a master is not checked and nothing is in flight.
   */
  get checking(): Promise<void> | undefined {
    let pending: Array<Promise<void>> | undefined;
    // The routine survey (once a second) holds nothing back; the first, or one that looks for a
    // master found changed, does.
    if (this.surveying && (this.firstSurvey || this.changeSeen || this.uncheckedMasters > 0)) {
      (pending ??= []).push(this.surveying);
    }
    for (const master of this.masters.values()) if (master.pending) (pending ??= []).push(master.pending);
    if (pending) return Promise.all(pending).then(() => undefined);
    // A master whose last check failed (e.g. a restarted cluster still said CLUSTERDOWN): checked
    // again now, so that an acquire decides on the answer (maybe an abstention), not before it.
    return this.uncheckedMasters > 0 ? this.survey() : undefined;
  }

  /** Reads every master's run_id now; a master new or changed is checked. Never rejects. */
  survey(): Promise<void> {
    if (!this.on || this.closed) return Promise.resolve();
    if (this.surveying) return this.surveying;
    const survey = this.readMasters().finally(() => {
      if (this.surveying === survey) this.surveying = undefined;
      this.firstSurvey = false;
      this.changeSeen = false;
    });
    this.surveying = survey;
    return survey;
  }

  /** The ms the master that serves `lockKeys`' slot abstains for from now; 0 when it votes. */
  abstainingForMs(lockKeys: readonly string[]): number {
    const master = this.masterOf(lockKeys);
    if (!master || master.abstainUntil === 0) return 0;
    const forMs = master.abstainUntil - performance.now();
    if (forMs > 0) return forMs;
    master.abstainUntil = 0;
    return 0;
  }

  /**
   * Why a call on `keys` may not run (its master was not checked, or the last survey found no
   * master for its slot), undefined when it may.
   */
  uncheckedFor(keys: readonly string[]): string | undefined {
    if (!this.on) return undefined;
    if (this.firstSurvey) return "connected; checking the cluster's masters before they vote";
    if (keys.length === 0) return undefined;
    const slot = this.slotOf(keys[0]!);
    const owner = this.owners[slot];
    // A survey taken while the cluster restarted can show some slots without a master: a grant
    // there would run on a server nobody checked, with no run_id to compare behind it (send()
    // compares only with a checked one), so it does not count until a survey finds the master.
    if (owner === undefined) return `slot ${slot}: no master known for it; surveying the cluster`;
    if (this.uncheckedMasters === 0) return undefined;
    return this.masters.get(owner)?.unchecked;
  }

  /** The run_id the master of `key`'s slot was checked with; undefined when none (guard off, INFO denied). */
  checkedRunId(key: string): string | undefined {
    if (!this.on) return undefined;
    const owner = this.owners[this.slotOf(key)];
    return owner === undefined ? undefined : this.masters.get(owner)?.runId;
  }

  /**
   * Whether `runId`, read on the master of `key`'s slot right after a call there, is the server
   * checked for that slot. When it is not (a restart, a failover the slot map has not shown yet),
   * the masters are surveyed again, and the caller's vote must not count.
   */
  confirm(key: string, runId: unknown): boolean {
    if (!this.on) return true;
    const owner = this.owners[this.slotOf(key)];
    const known = owner === undefined ? undefined : this.masters.get(owner)?.runId;
    if (known === String(runId)) return true;
    if (owner !== undefined) {
      const master = this.masters.get(owner);
      if (master) this.setUnchecked(master, `shard ${owner}: its server changed; checking it`);
    }
    this.changeSeen = true;
    void this.survey();
    return false;
  }

  private slotOf(key: string): number {
    if (this.lastKey !== key) {
      this.lastKey = key;
      this.lastKeySlot = keySlot(key);
    }
    return this.lastKeySlot;
  }

  private masterOf(keys: readonly string[]): Master | undefined {
    if (keys.length === 0) return undefined;
    const owner = this.owners[this.slotOf(keys[0]!)];
    return owner === undefined ? undefined : this.masters.get(owner);
  }

  private setUnchecked(master: Master, why: string | undefined): void {
    if ((master.unchecked === undefined) !== (why === undefined)) this.uncheckedMasters += why ? 1 : -1;
    master.unchecked = why;
  }

  private async readMasters(): Promise<void> {
    let masters: ReadonlyMap<string, readonly number[]>;
    try {
      masters = await this.cluster.masters();
    } catch {
      return; // surveyed again on the next probe
    }
    if (this.closed) return;
    const owners = new Array<string | undefined>(16384);
    for (const [address, slots] of masters) for (const slot of slots) owners[slot] = address;
    this.owners = owners;
    const timeoutMs = this.settings.timeoutMs;
    await Promise.all(
      [...masters].map(async ([address, slots]) => {
        if (slots.length === 0) return; // serves no slot: nothing of the lock's lives there
        let master = this.masters.get(address);
        if (!master) {
          master = { runId: undefined, pending: undefined, abstainUntil: 0, unchecked: undefined, checks: 0 };
          this.masters.set(address, master);
          this.setUnchecked(master, `shard ${address}: checking its server before it votes`);
        }
        const server = this.cluster.serverOf(address, timeoutMs);
        const info = await settleWithin(server.info('server'), timeoutMs).catch(() => TIMED_OUT);
        // Not answering: its calls fail on their own; its run_id is read again on the next survey.
        if (info === TIMED_OUT || this.closed) return;
        const runId = parseInfo(String(info)).run_id;
        if (runId !== undefined && runId === master.runId && master.unchecked === undefined) return;
        await this.check(address, master, Math.min(...slots), server);
      }),
    );
  }

  /**
   * How long a master abstains after a check that passed: what the check's script says, but at
   * least the guard when this client itself saw the master's server change (a run_id other than
   * the one it checked before), unless the new server is trusted across restarts. The script
   * reads the marker and identity record, which other clients write too: one that checked the new
   * server first (its check's reply lost to a time-out, or a client with a shorter guard) leaves
   * the record already updated, and one with the guard off seeds the markers to '0'. The script
   * then says 'same' and whatever the marker has left, down to nothing, while this client knows
   * that the server changed; nor does a check end an abstention that still runs.
   */
  private abstentionAfterCheck(master: Master, facts: ServerFacts, scriptSaysMs: number): number {
    const running = master.abstainUntil > 0 ? master.abstainUntil - performance.now() : 0;
    const sawChange = master.runId !== undefined && facts.runId !== undefined && facts.runId !== master.runId;
    const floor = sawChange && !trustedAcrossRestarts(facts) ? this.settings.guardMs : 0;
    return Math.max(scriptSaysMs, floor, running);
  }

  /** Runs the identity check on the master at `address`, beside the marker of its lowest slot. */
  private check(address: string, master: Master, slot: number, server: ServerCommands): Promise<void> {
    if (master.pending) return master.pending;
    const attempt = ++master.checks;
    const label = `${this.label()} (shard ${address})`;
    const marker = slotMarkerKey(this.settings.markerKey, slot);
    this.setUnchecked(master, master.unchecked ?? `shard ${address}: checking its server before it votes`);
    const pending = readServerFacts(server, this.settings.timeoutMs)
      .then((facts) => {
        if (this.closed) throw new Error('the engine closed');
        return checkIdentity(server, label, facts, this.settings, marker).then((result) => ({
          result,
          facts,
        }));
      })
      .then(
        ({ result, facts }) => {
          if (attempt !== master.checks) return;
          const abstainMs = this.abstentionAfterCheck(master, facts, result.abstainMs);
          master.runId = facts.runId;
          this.setUnchecked(master, undefined);
          // Monotonic: a step of this machine's wall clock neither ends the guard nor stretches it.
          master.abstainUntil = abstainMs > 0 ? performance.now() + abstainMs : 0;
          if (abstainMs > 0)
            this.onAbstention(abstainMs, result.why === undefined ? '' : `shard ${address}: ${result.why}`);
        },
        (err: unknown) => {
          if (attempt !== master.checks || this.closed) return;
          const reason = `the identity check failed (${describeError(err)})`;
          this.setUnchecked(master, `shard ${address}: connected, but ${reason}`);
          this.settings.logger.warn(
            `Redis Cluster ${label}: ${reason}; its slots do not vote until it passes`,
          );
          if (!this.closed) startTimeout(ADMISSION_RETRY_MS, () => void this.survey());
        },
      )
      .finally(() => {
        if (master.pending === pending) master.pending = undefined;
      });
    master.pending = pending;
    return pending;
  }
}
