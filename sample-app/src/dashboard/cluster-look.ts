import type { LockService, NodeStatus } from 'nest-quorum-lock';
import type { ActivityLog } from './activity-log.js';
import type { NodeView, StatusMessage } from './messages.js';

/**
 * One look at the cluster: PING every voter (`probe()`, each bounded by the module's nodeTimeout,
 * so a stopped node shows as down within that) and ask a majority about every account lock this
 * instance has seen (`inspect()`), which is how locks held by OTHER instances become visible.
 */
export async function lookAtCluster(locks: LockService, log: ActivityLog): Promise<StatusMessage> {
  const accounts = log.accounts;
  const [status, inspections] = await Promise.all([
    locks.probe(),
    // Without a quorum inspect() throws: the page then keeps what the events said.
    Promise.all(accounts.map((a) => locks.inspect(`account:${a}`).catch(() => null))),
  ]);
  accounts.forEach((account, i) => log.inspected(account, inspections[i]!));
  const now = Date.now();
  return {
    kind: 'status',
    at: now,
    quorum: status.quorum,
    quorumReachable: status.quorumReachable,
    nodes: status.nodes.map((n) => nodeView(n, now)),
    accounts: accounts.map((a) => log.view(a)),
  };
}

/** A voter's state for the page: abstaining wins over up (it answers but does not vote). */
export function nodeView(status: NodeStatus, now = Date.now()): NodeView {
  const abstaining = status.abstainingUntil !== undefined && status.abstainingUntil > now;
  return {
    node: status.node,
    state: !status.reachable ? 'down' : abstaining ? 'abstaining' : 'up',
    latencyMs: status.latencyMs ?? null,
    abstainingUntil: abstaining ? status.abstainingUntil! : null,
    reason: status.error ?? null,
  };
}
