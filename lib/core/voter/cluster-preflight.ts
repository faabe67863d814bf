import type { Redis } from 'ioredis';
import type { NodeConfigurationError } from '../errors.js';
import type { Preflight } from '../preflight.js';
import {
  checkServer,
  describeSoftware,
  readServerFacts,
  type Finding,
  type ServerReads,
} from './ioredis/preflight.js';

/** One master of a cluster, as preflight reads it. */
export interface ShardServer {
  /** `host:port`, named in the findings. */
  readonly address: string;
  /** The master's own connection (ioredis), or its commands routed to it. */
  readonly server: Redis | ServerReads;
}

/**
 * Preflight of a Redis Cluster voter (every client: ioredis, node-redis, Valkey GLIDE): the checks
 * of one server (ioredis/preflight.ts: maxmemory-policy, the ACL's INFO and CONFIG GET, a replica)
 * on every master, each finding naming its shard, reviewed as ONE voter. `cluster-enabled` is what
 * a cluster voter is, so it is not a finding here. The server id is the smallest run_id of the
 * masters: the same cluster listed twice (two voters) shows as one server listed twice; the
 * masters' software and versions are reported together (`Valkey 8.0.1`). A master
 * that does not answer within `timeoutMs` is left out (a shard down makes the voter partly
 * unavailable, not refused; it is read again on the next connection).
 * Returns the refusal under `preflight: 'error'`, else undefined.
 */
export async function reviewShards(
  preflight: Preflight,
  voter: object,
  label: string,
  shards: readonly ShardServer[],
  timeoutMs: number,
): Promise<NodeConfigurationError | undefined> {
  const read = await Promise.all(
    shards.map(({ address, server }) =>
      readServerFacts(server, timeoutMs).then(
        (facts) => ({ address, facts }),
        () => undefined,
      ),
    ),
  );
  const findings: Finding[] = [];
  let serverId: string | undefined;
  for (const shard of read) {
    if (!shard) continue;
    const { clusterEnabled: _enabled, redisMode: _mode, ...facts } = shard.facts;
    for (const finding of checkServer(facts)) {
      findings.push({ ...finding, problem: `shard ${shard.address}: ${finding.problem}` });
    }
    const runId = facts.runId;
    if (runId !== undefined && (serverId === undefined || runId < serverId)) serverId = runId;
  }
  const server = describeSoftware(read.map((shard) => shard?.facts.software));
  return preflight.review(voter, label, { serverId, server, findings });
}
