import { RedisNodes } from 'nest-quorum-lock/testing';

/**
 * Starts `count` fresh redis-server processes (no persistence). RedisNodes records them fresh for
 * their run_id (the engine's default key prefix): the engine runs its normal production path (guard
 * on, one GET of the marker per acquire) instead of abstaining for `restartGuard` (60 s) at first.
 */
export function startNodes(count: number): Promise<RedisNodes> {
  return RedisNodes.start(count);
}

/** Server-side counters of one node (INFO stats + commandstats). */
export interface ServerCounters {
  /** Commands executed. */
  readonly commands: number;
  /** Read events on client sockets: one per batch of commands that arrived together. */
  readonly reads: number;
  /** Calls per command name, e.g. `evalsha`. */
  readonly calls: Readonly<Record<string, number>>;
  /** Resident memory of the node, bytes. */
  readonly usedMemory: number;
}

/** Reads every node's counters (through RedisNodes' own inspection clients). */
export function serverCounters(nodes: RedisNodes): Promise<ServerCounters[]> {
  return Promise.all(
    nodes.urls.map(async (_, i) => {
      const info = await nodes.client(i).info('all');
      const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
      const calls: Record<string, number> = {};
      for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[m[1]!] = Number(m[2]);
      return {
        commands: field('total_commands_processed'),
        reads: field('total_reads_processed'),
        calls,
        usedMemory: field('used_memory'),
      };
    }),
  );
}

/** Sum over nodes of `after - before` for one counter. */
export function delta(
  before: readonly ServerCounters[],
  after: readonly ServerCounters[],
  pick: (c: ServerCounters) => number,
): number {
  return after.reduce((sum, a, i) => sum + pick(a) - pick(before[i]!), 0);
}
