import { settleWithin, TIMED_OUT, type Runtime } from '../runtime.js';

/*
 * What a server says of itself, read on each new connection (a Cluster: of each master), and pure
 * checks of it against what Redlock assumes of a voter (an independent primary that keeps every key
 * until it expires): preflight's findings, the run_id and persistence the identity guard needs, and
 * the ACL rules the lock user lacks (a probe script that tries each command the scripts call).
 */

/** Sends one command to the server being read (a transport's send with its route). */
export type ServerSend = (command: readonly string[]) => Promise<unknown>;

/**
 * How the engine calls its scripts (the option `scripts`): `eval`, EVALSHA with EVAL after
 * NOSCRIPT; `functions`, FCALL / FCALL_RO of this version's FUNCTION library (voter/functions.ts).
 */
export type ScriptMode = 'eval' | 'functions';

/**
 * Which server software answers, and its own version: `Redis 7.4.1`, `Valkey 8.0.1`. Valkey
 * reports `redis_version` too (7.2.4: the Redis it is compatible with), beside `server_name:valkey`
 * and `valkey_version`.
 */
export interface ServerSoftware {
  readonly name: 'Redis' | 'Valkey';
  readonly version: string;
}

/** The software named in INFO server's fields (undefined when INFO said nothing of it). */
export function serverSoftware(info: Readonly<Record<string, string>>): ServerSoftware | undefined {
  if (info.server_name === 'valkey' || info.valkey_version !== undefined) {
    return { name: 'Valkey', version: info.valkey_version ?? info.redis_version ?? '?' };
  }
  return info.redis_version === undefined ? undefined : { name: 'Redis', version: info.redis_version };
}

/** `Valkey 8.0.1`; several servers (a Cluster's masters) in one text: `Redis 7.0.15, Redis 7.4.1`. */
export function describeSoftware(software: ReadonlyArray<ServerSoftware | undefined>): string | undefined {
  const names = [...new Set(software.flatMap((s) => (s ? [`${s.name} ${s.version}`] : [])))].sort();
  return names.length === 0 ? undefined : names.join(', ');
}

/** What a Redis server says of itself: INFO server and replication, and four CONFIG GETs. */
export interface ServerFacts {
  /** INFO server: which software, which version (Redis or Valkey). */
  readonly software?: ServerSoftware;
  /** INFO server `run_id`: new on every start of the process, so it names one server's lifetime. */
  readonly runId?: string;
  /** INFO server `redis_mode`: standalone, cluster or sentinel. */
  readonly redisMode?: string;
  /** INFO replication `role`: master or slave. */
  readonly role?: string;
  /** A replica's primary, `host:port`. */
  readonly primary?: string;
  readonly connectedReplicas?: number;
  /**
   * INFO replication `second_repl_offset`: -1 unless this server took over another's replication
   * history, i.e. it is a replica that was promoted (a failover).
   */
  readonly secondReplOffset?: number;
  readonly maxmemoryPolicy?: string;
  readonly appendonly?: string;
  readonly appendfsync?: string;
  readonly clusterEnabled?: string;
  /**
   * ACL rules the connection's user lacks (NOPERM), as `ACL SETUSER` spells them: `+info`,
   * `+config|get`, and (acl-probe.ts) `+incr`, `~redlock:*`, `&__redlock_wake__:*`...
   */
  readonly denied: readonly string[];
  /** The ACL user of the connection (`default` when none is given). */
  readonly user?: string;
}

/** A problem (or a remark) about one server. */
export interface Finding {
  /** `error`: it breaks Redlock's assumptions; `notice`: worth knowing, nothing to fix. */
  readonly severity: 'error' | 'notice';
  readonly problem: string;
  readonly fix: string;
}

const CONFIG_KEYS = ['maxmemory-policy', 'appendonly', 'appendfsync', 'cluster-enabled'] as const;

/**
 * Reads a server's facts (all commands at once, at most `timeoutMs`). A NOPERM reply is a fact
 * (which command the ACL denies), not a failure; anything else (a time-out, a dropped connection)
 * rejects.
 */
export async function readServerFacts(
  runtime: Runtime,
  send: ServerSend,
  username: string | undefined,
  timeoutMs: number,
): Promise<ServerFacts> {
  const denied = new Set<string>();
  const allowed = (rule: string, command: string[]): Promise<unknown> =>
    send(command).catch((err: unknown) => {
      if (!(err instanceof Error && err.message.startsWith('NOPERM'))) throw err;
      denied.add(rule);
      return undefined;
    });
  const reads = Promise.all([
    allowed('+info', ['INFO', 'server']),
    allowed('+info', ['INFO', 'replication']),
    ...CONFIG_KEYS.map((key) => allowed('+config|get', ['CONFIG', 'GET', key])),
  ]);
  const replies = await settleWithin(runtime, reads, timeoutMs);
  if (replies === TIMED_OUT) throw new Error(`no reply to INFO / CONFIG GET within ${timeoutMs} ms`);
  const [serverInfo, replication, ...configs] = replies;
  const text = (reply: unknown) => (reply === undefined || reply === null ? '' : String(reply));
  const info = { ...parseInfo(text(serverInfo)), ...parseInfo(text(replication)) };
  const config = Object.fromEntries(configs.flatMap((reply) => configPairs(reply)));
  const number = (value: string | undefined) => (value === undefined ? undefined : Number(value));
  return {
    software: serverSoftware(info),
    runId: info.run_id,
    redisMode: info.redis_mode,
    role: info.role,
    primary: info.master_host === undefined ? undefined : `${info.master_host}:${info.master_port}`,
    connectedReplicas: number(info.connected_slaves),
    secondReplOffset: number(info.second_repl_offset),
    maxmemoryPolicy: config['maxmemory-policy'],
    appendonly: config.appendonly,
    appendfsync: config.appendfsync,
    clusterEnabled: config['cluster-enabled'],
    denied: [...denied],
    user: username ?? 'default',
  };
}

/**
 * The `[name, value]` pairs of a CONFIG GET reply in any of the shapes clients give it: a flat
 * array (RESP2), an object or a Map (a RESP3 map), or `[{ key, value }]` (Valkey GLIDE).
 */
export function configPairs(reply: unknown): Array<[string, string]> {
  if (reply instanceof Map) return [...reply].map(([k, v]) => [String(k), String(v)]);
  if (Array.isArray(reply)) {
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i < reply.length; i++) {
      const item = reply[i] as unknown;
      if (item !== null && typeof item === 'object' && 'key' in item && 'value' in item) {
        pairs.push([String(item.key), String(item.value)]);
      } else if (i + 1 < reply.length) {
        pairs.push([String(item), String(reply[++i])]);
      }
    }
    return pairs;
  }
  if (reply !== null && typeof reply === 'object')
    return Object.entries(reply).map(([k, v]) => [k, String(v)]);
  return [];
}

/** `field:value` lines of an INFO reply. */
export function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) fields[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return fields;
}

/**
 * Checks one server's facts against what Redlock assumes of a voter: an independent primary that
 * keeps every key until it expires.
 */
export function checkServer(facts: ServerFacts): Finding[] {
  const findings: Finding[] = [];
  if (facts.denied.length > 0) {
    const user = facts.user ?? 'default';
    const commands = facts.denied
      .filter((r) => r.startsWith('+'))
      .map((r) => r.slice(1).replace('|', ' ').toUpperCase());
    const what = [
      ...(commands.length > 0 ? [`run ${commands.join(' and ')}`] : []),
      ...facts.denied.filter((r) => r.startsWith('~')).map((r) => `access the keys ${r.slice(1)}`),
      ...facts.denied.filter((r) => r.startsWith('&')).map((r) => `publish to ${r.slice(1)}`),
    ];
    const forPreflight = facts.denied.includes('+info') || facts.denied.includes('+config|get');
    findings.push({
      severity: 'error',
      problem:
        `its ACL user "${user}" may not ${what.join(', ')} (NOPERM): preflight reads INFO and CONFIG GET, ` +
        "the lock's scripts call the data commands, and waiters are woken on the channel",
      fix:
        `ACL SETUSER ${user} ${facts.denied.join(' ')} (the minimal lock user is in the README, "Deploying safely")` +
        (forPreflight
          ? ", or preflight: 'off' (the identity guard then cannot tell a restarted or failed-over server)"
          : ''),
    });
  }
  const policy = facts.maxmemoryPolicy;
  if (policy !== undefined && policy !== 'noeviction') {
    findings.push({
      severity: 'error',
      problem:
        `maxmemory-policy is ${policy}: under memory pressure the server evicts keys, and lock keys carry a TTL, ` +
        'so volatile-* policies evict them as well as allkeys-* do; an evicted lock is granted to a second client',
      fix: 'CONFIG SET maxmemory-policy noeviction (and set it in redis.conf), or give the locks their own server',
    });
  }
  if (facts.role === 'slave') {
    findings.push({
      severity: 'error',
      problem: `it is a replica${facts.primary ? ` of ${facts.primary}` : ''}: it cannot take a lock (read-only) and is not independent of its primary`,
      fix: 'list independent primaries; for a Sentinel-managed primary give { sentinels: [...], name } instead of an address',
    });
  }
  if (facts.clusterEnabled === 'yes' || facts.redisMode === 'cluster') {
    findings.push({
      severity: 'error',
      problem:
        'it is a Redis Cluster node given as a plain node: it serves only its own hash slots, so most lock keys ' +
        'would be MOVED elsewhere, and its shards are not independent voters',
      fix: 'list standalone servers (cluster-enabled no), or give the whole cluster as ONE voter: { cluster: [{ host, port }, ...] }',
    });
  }
  if ((facts.connectedReplicas ?? 0) > 0 && facts.role !== 'slave') {
    findings.push({
      severity: 'notice',
      problem:
        `it has ${facts.connectedReplicas} replica(s); replication is asynchronous, so one promoted by a failover ` +
        'may lack the newest lock keys and fencing counters',
      fix: 'nothing to do: the identity guard makes a promoted replica abstain for restartGuard',
    });
  }
  return findings;
}

/**
 * Whether the server may be trusted across its own restarts: every write was fsynced before it
 * was acknowledged (appendonly yes + appendfsync always), and it did not take over from another
 * server (a promoted replica may lag its primary, however it persists).
 */
export function trustedAcrossRestarts(facts: ServerFacts): boolean {
  return (
    facts.appendonly === 'yes' &&
    facts.appendfsync === 'always' &&
    facts.secondReplOffset !== undefined &&
    facts.secondReplOffset < 0
  );
}
