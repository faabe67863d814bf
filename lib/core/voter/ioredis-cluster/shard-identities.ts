import type { Cluster, Redis } from 'ioredis';
import { startTimeout } from '../../timeouts.js';
import { describeError } from '../describe-error.js';
import { ADMISSION_RETRY_MS, checkIdentity, type AdmissionSettings } from '../ioredis/admission.js';
import { ioredisServer } from '../ioredis/connection.js';
import { readServerFacts } from '../ioredis/preflight.js';
import { keySlot, slotMarkerKey } from './slots.js';

/** One master's state under the identity guard. */
interface Shard {
  /** The check in flight, if any, and the connection it checks (see ShardIdentities.connections). */
  pending: Promise<void> | undefined;
  pendingOn: { node: Redis; connection: number } | undefined;
  /** performance.now() until which the master's slots abstain (0: they vote). */
  abstainUntil: number;
  /**
   * Why the master's current connection may not vote yet (it closed, or its check has not passed),
   * undefined once checked: a restarted or new master's connection is new, and its server is
   * checked before its slots vote.
   */
  unchecked: string | undefined;
  /** Counts the checks started, so that a check superseded by a newer one changes nothing. */
  checks: number;
}

/**
 * The identity guard (scripts/identity.ts) of a Redis Cluster voter, shard by shard: a master
 * that restarted (its `appendfsync everysec` AOF may have lost the newest writes) or a replica
 * promoted by a failover must abstain for restartGuard on the slots it serves, while the other
 * shards vote. As a single server's admission does, every new connection to a master (the
 * cluster's first, a reconnection, a new master after a failover) runs IDENTITY_CHECK on it, with
 * the run_id that master reports, before its slots vote again: the identity record sits beside
 * the restart-guard marker of the lowest slot the master serves (`<marker of that slot>:id`, in
 * that slot, so a resharded slot takes it along), and the script drops the shard's fence counters
 * when the server changed. The answer is kept per master; an acquire reads it for its key's slot
 * without I/O ({@link abstainingForMs}).
 *
 * The record is written on the master, so it reaches the master's replicas: a promoted replica
 * finds the old master's run_id in it, which is how a failover is told from a reconnection.
 */
export class ShardIdentities {
  private readonly shards = new Map<string, Shard>();
  /** How many shards are {@link Shard.unchecked}: the hot path reads this number only. */
  private uncheckedShards = 0;
  /**
   * Until the masters were first checked (the cluster's first 'ready', then their checks): no
   * shard is known yet, and a call waits for this rather than reach a master not checked.
   */
  private firstChecks: Promise<void> | undefined;
  private firstChecksStarted: (() => void) | undefined;
  /** The nodes watched, each with the count of its connections ('ready' events) so far. */
  private readonly connections = new WeakMap<Redis, number>();
  /** The listeners put on each node watched, taken off at {@link close}. */
  private readonly listeners = new Map<Redis, { ready: () => void; close: () => void }>();
  /** Checks waiting for the cluster's 'ready', taken off at {@link close}. */
  private readonly waitingForReady = new Set<() => void>();
  private closed = false;

  constructor(
    private readonly client: Cluster,
    private readonly label: string,
    private readonly settings: AdmissionSettings,
    /** Hears a master that starts to abstain: how long, and why ('' for the restart guard's own reason). */
    private readonly onAbstention: (forMs: number, why: string) => void,
  ) {
    if (this.on) this.firstChecks = new Promise((resolve) => (this.firstChecksStarted = resolve));
  }

  /** Whether the guard runs at all (restartGuard on). */
  get on(): boolean {
    return this.settings.guardMs > 0;
  }

  /** Checks every master now (call when the cluster is ready), and each again whenever its connection is new. */
  checkMasters(): void {
    if (!this.on) return;
    // The cluster client connects to a node on its first command: the check's own commands do.
    for (const node of this.client.nodes('all')) {
      this.watch(node);
      this.check(node);
    }
    const started = this.firstChecksStarted;
    if (!started) return;
    this.firstChecksStarted = undefined;
    void (this.pendingChecks() ?? Promise.resolve()).then(() => {
      this.firstChecks = undefined;
      started();
    });
  }

  /**
   * Checks `node` on each of its new connections, once the cluster is ready, if it is a master then
   * (a node the cluster client adds, '+node': a new master after a failover, a replica, a shard).
   */
  watch(node: Redis): void {
    if (!this.on || this.closed || this.connections.has(node)) return;
    this.connections.set(node, 0);
    const ready = () => {
      this.connections.set(node, (this.connections.get(node) ?? 0) + 1);
      this.whenClusterReady(() => this.check(node));
    };
    // A closed connection: whatever comes next (a reconnection, maybe to a restarted server) is
    // checked before the shard votes again.
    const close = () => {
      const shard = this.shards.get(addressOf(node));
      if (shard)
        this.setUnchecked(shard, `shard ${addressOf(node)}: its connection closed; checking its server`);
    };
    node.on('ready', ready);
    node.on('close', close);
    this.listeners.set(node, { ready, close });
  }

  /** Stops watching: takes its listeners off the cluster's nodes (a client passed in lives on). */
  close(): void {
    this.closed = true;
    for (const [node, { ready, close }] of this.listeners) {
      node.off('ready', ready);
      node.off('close', close);
    }
    this.listeners.clear();
    for (const check of this.waitingForReady) this.client.off('ready', check);
    this.waitingForReady.clear();
  }

  /** The checks in flight, if any: an acquire waits for them (they may tell its shard to abstain). */
  get checking(): Promise<void> | undefined {
    return this.firstChecks ?? this.pendingChecks();
  }

  private pendingChecks(): Promise<void> | undefined {
    let pending: Array<Promise<void>> | undefined;
    for (const shard of this.shards.values()) if (shard.pending) (pending ??= []).push(shard.pending);
    return pending && Promise.all(pending).then(() => undefined);
  }

  /** The ms the master that serves `lockKeys`' slot abstains for from now; 0 when it votes. */
  abstainingForMs(lockKeys: readonly string[]): number {
    const shard = this.shardOf(lockKeys);
    if (!shard || shard.abstainUntil === 0) return 0;
    const forMs = shard.abstainUntil - performance.now();
    if (forMs > 0) return forMs;
    shard.abstainUntil = 0;
    return 0;
  }

  /**
   * Why a call on `keys` may not run: the master of their slot was not checked on its current
   * connection (undefined: it may). No lookup while every shard is checked.
   */
  uncheckedFor(keys: readonly string[]): string | undefined {
    if (this.firstChecks) return "connected; checking the cluster's masters before they vote";
    return this.uncheckedShards === 0 ? undefined : this.shardOf(keys)?.unchecked;
  }

  private shardOf(keys: readonly string[]): Shard | undefined {
    if (this.shards.size === 0 || keys.length === 0) return undefined;
    const owner = this.client.slots[keySlot(keys[0]!)]?.[0];
    return owner === undefined ? undefined : this.shards.get(owner);
  }

  private setUnchecked(shard: Shard, why: string | undefined): void {
    if ((shard.unchecked === undefined) !== (why === undefined)) this.uncheckedShards += why ? 1 : -1;
    shard.unchecked = why;
  }

  /** Runs `check` once the cluster is ready (a master may reconnect while the slot map is refreshed). */
  private whenClusterReady(check: () => void): void {
    if (this.client.status === 'ready') return check();
    const once = () => {
      this.waitingForReady.delete(once);
      check();
    };
    this.waitingForReady.add(once);
    this.client.once('ready', once);
  }

  /** Whether `node` is (or will be: it connects on its first command) one of the cluster client's nodes. */
  private live(node: Redis): boolean {
    return node.status !== 'end' && node.status !== 'close' && this.client.nodes('all').includes(node);
  }

  /** Runs the identity check on master `node`'s current connection. */
  private check(node: Redis): void {
    if (this.closed || !this.live(node)) return; // its own 'ready' (or the new node's) checks again
    const address = addressOf(node);
    const slot = this.client.slots.findIndex((owners) => owners?.[0] === address);
    if (slot < 0) return; // serves no slot (yet): nothing of the lock's lives there
    let shard = this.shards.get(address);
    if (!shard) {
      shard = { pending: undefined, pendingOn: undefined, abstainUntil: 0, unchecked: undefined, checks: 0 };
      this.shards.set(address, shard);
    }
    // Once per connection: the cluster's 'ready' and the node's own may both ask for it. A check
    // sent before the node is connected runs on the connection about to come up.
    const connection = (this.connections.get(node) ?? 0) + (node.status === 'ready' ? 0 : 1);
    if (shard.pending && shard.pendingOn?.node === node && shard.pendingOn.connection === connection) return;
    const attempt = ++shard.checks;
    const current = () => attempt === shard.checks;
    const server = ioredisServer(node);
    const label = `${this.label} (shard ${address})`;
    const marker = slotMarkerKey(this.settings.markerKey, slot);
    shard.pendingOn = { node, connection };
    this.setUnchecked(shard, `shard ${address}: connected; checking its server before it votes`);
    shard.pending = readServerFacts(server, this.settings.timeoutMs)
      .then((facts) => checkIdentity(server, label, facts, this.settings, marker))
      .then(
        ({ abstainMs, why }) => {
          if (!current()) return;
          shard.pending = undefined;
          this.setUnchecked(shard, undefined);
          // Monotonic: a step of this machine's wall clock neither ends the guard nor stretches it.
          shard.abstainUntil = abstainMs > 0 ? performance.now() + abstainMs : 0;
          if (abstainMs > 0)
            this.onAbstention(abstainMs, why === undefined ? '' : `shard ${address}: ${why}`);
        },
        (err: unknown) => {
          if (!current()) return;
          shard.pending = undefined;
          // Not checked: its slots do not vote until a check passes (asked again shortly, on a
          // connection still in use; a new one is checked on its own 'ready').
          const reason = `the identity check failed (${describeError(err)})`;
          this.setUnchecked(shard, `shard ${address}: connected, but ${reason}`);
          if (!this.live(node)) return;
          this.settings.logger.warn(
            `Redis Cluster ${label}: ${reason}; its slots do not vote until it passes`,
          );
          startTimeout(ADMISSION_RETRY_MS, () => {
            if (current()) this.check(node);
          });
        },
      );
  }
}

/** A node's address as the cluster client's slot map names it. */
function addressOf(node: Redis): string {
  return `${node.options.host}:${node.options.port}`;
}
