import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { LockService, type LockClusterStatus } from '../nest/lock.service.js';
import type { NodeStatus } from '../core/index.js';

/** What one node is doing for the quorum right now. */
export type RedlockNodeState = 'up' | 'down' | 'abstaining';

/** One node in the indicator's details. */
export interface RedlockNodeHealth {
  /** The node's log-safe label (`redis://host:port`, never a password). */
  readonly node: string;
  readonly state: RedlockNodeState;
  /** Round-trip time of the PING, ms; only for nodes that answered ('up' or 'abstaining'). */
  readonly latencyMs?: number;
  /** ISO time until which the node abstains under the restart guard; only when 'abstaining'. */
  readonly abstainingUntil?: string;
  /** Why the node is 'down' (no reply within nodeTimeout, connection refused, ...). */
  readonly error?: string;
  /** Which server it is, as its INFO said when last checked: `Redis 7.4.1`, `Valkey 8.0.1`. */
  readonly server?: string;
}

/** The details the indicator reports under its key, next to `status`. */
export interface RedlockHealthDetails {
  /** Votes a lock needs (a strict majority of the nodes). */
  readonly quorum: number;
  /** Nodes that answered and vote (not down, not abstaining). */
  readonly voting: number;
  /** Every configured node, in configuration order. */
  readonly nodes: RedlockNodeHealth[];
  /** Set on Terminus 11 only, which has no 'degraded' status: 'up', but some node does not vote. */
  readonly degraded?: true;
  /** Set when the probe itself failed (the indicator then reports 'down'). */
  readonly message?: string;
}

/**
 * The part of Terminus's `HealthIndicatorSession` used here. Terminus 11's session has `up` and
 * `down` only; 12 adds `degraded`: optional here, so the run-time check below is honest against
 * either version.
 */
interface Session<Key extends string> {
  up(data: RedlockHealthDetails): HealthIndicatorResult<Key>;
  down(data: RedlockHealthDetails): HealthIndicatorResult<Key>;
  degraded?(data: RedlockHealthDetails): HealthIndicatorResult<Key>;
}

/**
 * A Terminus health indicator for the lock's Redis nodes. It asks every node (a PING bounded by
 * the module's `nodeTimeout`, through {@link LockService.probe}) and reports:
 *
 * - `up` when every node answers and votes;
 * - `degraded` when a quorum still votes but some node is down or abstaining under the restart
 *   guard (locks are granted, with less margin). Terminus 11 has no `degraded` status: there the
 *   indicator reports `up` with `degraded: true` in its details;
 * - `down` when fewer than a quorum vote: no lock can be granted (HealthCheckService answers 503).
 *
 * The details name every node with its log-safe label, its state, its PING latency, which server
 * it is (`Valkey 8.0.1`) and, when it abstains, until when. Needs `TerminusModule` and the (global) `RedlockModule`:
 *
 * ```ts
 * @Module({ imports: [TerminusModule, RedlockHealthModule], controllers: [HealthController] })
 * ```
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    private readonly locks: LockService,
  ) {}

  /**
   * Probes every node and reports the quorum's health under `key` (default `'redlock'`).
   * Never throws: a probe that fails reports `down` with a `message`.
   */
  async isHealthy<const Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
  ): Promise<HealthIndicatorResult<Key>> {
    const indicator = this.health.check(key) as unknown as Session<Key>;
    let status: LockClusterStatus;
    try {
      status = await this.locks.probe();
    } catch (err) {
      // probe() settles every node within nodeTimeout; this is a bug or a replaced LockService,
      // and a health endpoint should say so rather than answer 500.
      return indicator.down({ quorum: 0, voting: 0, nodes: [], message: errorMessage(err) });
    }
    const nodes = status.nodes.map(nodeHealth);
    const voting = nodes.filter((n) => n.state === 'up').length;
    const details: RedlockHealthDetails = { quorum: status.quorum, voting, nodes };
    // Decided from the same probe as the node states, so status and details never disagree.
    if (voting < status.quorum) return indicator.down(details);
    if (voting === nodes.length) return indicator.up(details);
    return indicator.degraded ? indicator.degraded(details) : indicator.up({ ...details, degraded: true });
  }
}

/** One probed node as the details show it. */
function nodeHealth(status: NodeStatus): RedlockNodeHealth {
  const server = status.server === undefined ? {} : { server: status.server };
  if (!status.reachable) {
    return { node: status.node, state: 'down', ...(status.error ? { error: status.error } : {}), ...server };
  }
  const latency = status.latencyMs === undefined ? {} : { latencyMs: status.latencyMs };
  if (status.abstainingUntil !== undefined) {
    return {
      node: status.node,
      state: 'abstaining',
      ...latency,
      abstainingUntil: new Date(status.abstainingUntil).toISOString(),
      ...server,
    };
  }
  return { node: status.node, state: 'up', ...latency, ...server };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
