import { settleWithin, TIMED_OUT } from '../runtime.js';
import type { Voters } from './voters.js';

/*
 * The voters' health as the engine reports it: connecting them at bootstrap (`Redlock.connect`),
 * and each voter's reachability from its connection's state (`status`) or from a PING (`probe`).
 */

/** How often the bootstrap looks whether a quorum of distinct servers decided it, ms. */
const DECIDED_POLL_MS = 10;

/** Reachability of one voter, as reported by `Redlock.connect`, `status` and `probe`. */
export interface NodeStatus {
  readonly node: string;
  readonly reachable: boolean;
  readonly error?: string;
  /** Epoch ms until which the node abstains under the restart guard, if it does. */
  readonly abstainingUntil?: number;
  /** Round-trip time of a PING, from `probe`. */
  readonly latencyMs?: number;
  /**
   * Why this engine hears no wake-ups from the node: its subscription failed (retried with
   * back-off; waiters ask the node again every second meanwhile). Absent while it works.
   */
  readonly subscriptionError?: string;
  /**
   * Which server answers, as its INFO said when the node was last checked (the identity guard, on
   * each new connection): `Redis 7.4.1`, `Valkey 8.0.1` (Valkey's own version, not the
   * `redis_version` it reports for compatibility); for a Cluster voter its masters', each distinct
   * one. Absent before the first check, or where the ACL denies INFO.
   */
  readonly server?: string;
}

/**
 * Waits until every voter is connected, at most `timeoutMs` (a voter that refused the
 * credentials says so at once: nothing to wait for), or until a quorum of distinct servers
 * votes and no other voter is still on its way (each failed its latest attempt or was refused:
 * they join when they connect, see {@link Voters.whenJoined}); sums up those that are not connected
 * in one line; each voter already logged its own error, with what to fix, when it happened.
 * Resolves with each voter's status (it does not throw: a minority may well be down).
 */
export async function connectVoters(voters: Voters, timeoutMs: number): Promise<NodeStatus[]> {
  let over = false;
  const ready = voters.list.map(() => false);
  const everyone = Promise.all(voters.list.map((v, i) => v.waitReady(timeoutMs).then((r) => (ready[i] = r))));
  // Polled: a transport's failed attempt is no event at this level.
  const decided = new Promise<void>((resolve) => {
    const poll = () => {
      if (over || quorumDecided(voters, ready)) resolve();
      else voters.runtime.setTimeout(poll, DECIDED_POLL_MS);
    };
    poll();
  });
  await Promise.race([everyone, decided]);
  over = true;
  voters.abstentions.logPending(); // the voters that abstain from boot, now rather than after the batch time
  const statuses = voterStatuses(voters);
  const down = statuses.filter((s) => !s.reachable);
  if (down.length === 0) return statuses;
  const { quorum, logger } = voters;
  const count = voters.list.length;
  const connected = count - down.length;
  const which = down.map((s) => `${s.node} (${shortReason(s.node, s.error, timeoutMs)})`).join(', ');
  if (connected < quorum) {
    logger.error(
      `No quorum: ${connected} of ${count} Redis nodes connected, ${quorum} needed; no lock can be ` +
        `granted until ${quorum} are. Not connected: ${which}.`,
    );
  } else {
    logger.warn(`${down.length} of ${count} Redis nodes not connected (a quorum of ${quorum} is): ${which}.`);
  }
  return statuses;
}

/**
 * Whether the bootstrap may start: a quorum of distinct servers is `ready` (connected and checked;
 * two voters whose servers share a run_id count once), and none of the others is still connecting
 * or being checked.
 */
function quorumDecided({ list, quorum }: Voters, ready: readonly boolean[]): boolean {
  if (list.some((v, i) => !ready[i] && (v.pending ?? true))) return false;
  const seen = new Set<string>();
  let distinct = 0;
  for (const voter of list.filter((v, i) => ready[i] && v.connected)) {
    const ids = voter.serverIds ?? [];
    if (ids.some((id) => seen.has(id))) continue;
    for (const id of ids) seen.add(id);
    distinct++;
  }
  return distinct >= quorum;
}

/** Current reachability of each voter, from the connections' state (no I/O). */
export function voterStatuses({ list, runtime, abstentions }: Voters): NodeStatus[] {
  const now = runtime.now();
  const wallNow = runtime.wallNow();
  return list.map((voter, i) => ({
    node: voter.label,
    reachable: voter.connected,
    ...(voter.connected ? {} : { error: voter.connectionError }),
    ...serverOf(voter.server),
    // Reported in epoch ms (a convenience for people and health checks), decided monotonically.
    ...(abstentions.abstainsUntil(i) > now
      ? { abstainingUntil: Math.round(wallNow + abstentions.abstainsUntil(i) - now) }
      : {}),
  }));
}

/**
 * Like {@link voterStatuses}, but asks each voter (PING, bounded by nodeTimeout), so a voter that is
 * connected but hung (e.g. paused) shows as unreachable, and reachable ones report a latency.
 */
export function probeVoters(voters: Voters): Promise<NodeStatus[]> {
  const { list, runtime, nodeTimeout: timeout } = voters;
  return Promise.all(
    voterStatuses(voters).map(async (status, i) => {
      if (!status.reachable) return status;
      const started = runtime.now();
      const answer = await settleWithin(runtime, list[i]!.ping(), timeout).catch((err: unknown) => err);
      if (answer === undefined) {
        return { ...status, latencyMs: Math.round((runtime.now() - started) * 100) / 100 };
      }
      const error =
        answer === TIMED_OUT ? `no reply to PING within ${timeout} ms` : list[i]!.failureReason(answer);
      return { ...status, reachable: false, error };
    }),
  );
}

/** A status's `server`, left out when not known. */
function serverOf(server: string | undefined): { server?: string } {
  return server === undefined ? {} : { server };
}

/**
 * A voter's connection error in a few words, for the connect summary: what kind of failure (the
 * voter's own line has the details and the fix), or that it did not answer in time. A refusal by
 * preflight starts with the node's own label (`Redis node <label>: <problem>. Fix: ...`): its
 * problem is the reason, not the label.
 */
function shortReason(label: string, error: string | undefined, timeoutMs: number): string {
  if (!error || /^(wait|connecting|connect|reconnecting)$/.test(error)) {
    return `no connection within connectTimeout ${timeoutMs} ms`;
  }
  const own = `Redis node ${label}: `;
  if (error.startsWith(own)) {
    return `refused by preflight: ${error
      .slice(own.length)
      .replace(/ \(.*$/s, '')
      .replace(/\. Fix: .*$/s, '')}`;
  }
  return error.replace(/ \(.*$/s, '').replace(/: .*$/s, '');
}
