import { NodeNotFreshError } from '../errors.js';
import { DEFAULTS } from '../options.js';
import { realRuntime, settleWithin, TIMED_OUT } from '../runtime.js';
import { openOneOff } from '../transport/pick.js';
import { redactUrl } from '../transport/urls.js';
import { FRESH_NODE } from '../scripts/guards.js';
import { GUARD_MARKER_NAME, IDENTITY_SUFFIX } from '../scripts/keys.js';
import { runScript } from '../voter/send.js';
import { readServerFacts, trustedAcrossRestarts, type ServerSend } from '../voter/server.js';

/*
 * Fresh nodes (a test's servers, a docker compose node created just now) cannot have granted a
 * lock, yet the restart guard cannot tell them from a node that restarted empty and forgot its
 * locks: both abstain for `restartGuard`. Whoever knows a node is fresh records it through the
 * guard's own record, bound to the server's run_id: the marker says "passed" and the identity
 * record names this server, so the identity check lets exactly this server vote at once. The same
 * node restarted is another server (a new run_id, and without persistence no record at all): it
 * abstains as any restarted node does. No flag in the engine, nothing to switch off.
 */

/** Most keys a node may hold for the check to look at each of them; more is refused outright. */
const MOST_KEYS = 1000;
/** Bound on connecting to a node by its URL, ms. */
const CONNECT_MS = 5000;

/** What {@link markFreshNode} is told. */
export interface FreshNodeOptions {
  /** The `keyPrefix` of the application that will lock on the node. Default: the engine's (`redlock:`). */
  readonly keyPrefix?: string;
  /** Log-safe name of the node for messages. Default: `the node`. */
  readonly label?: string;
  /** Bound on reading the server's facts, ms. Default 5000. */
  readonly timeoutMs?: number;
}

/** What {@link markFreshNode} recorded. */
export interface FreshNodeProof {
  /** The run_id of the server recorded as fresh: the proof holds for it only. */
  readonly runId: string;
  /** The restart-guard marker set to '0'; its identity record is beside it. */
  readonly marker: string;
}

/**
 * Records that the standalone Redis (or Valkey) server `send` talks to is fresh, for locks under
 * `keyPrefix`: when its database holds no key but the restart guard's own, its restart-guard marker
 * is marked passed and its identity record names this server's run_id, so an engine lets it vote at
 * once instead of abstaining for `restartGuard`. If the server restarts later it is another server
 * and abstains as usual. Only for a server created just now: one that restarted empty looks the
 * same, and is exactly what the restart guard waits out.
 * @throws NodeNotFreshError when the node holds other keys, is a replica or a Cluster node, or does
 *   not report its run_id (INFO denied); nothing is written then.
 */
export async function markFreshNode(
  send: ServerSend,
  options: FreshNodeOptions = {},
): Promise<FreshNodeProof> {
  const label = options.label ?? 'the node';
  const refuse = (reason: string) => new NodeNotFreshError(label, reason);
  const facts = await readServerFacts(realRuntime, send, undefined, options.timeoutMs ?? 5000);
  if (!facts.runId) {
    throw refuse('INFO is denied to this user, so its run_id, which the proof is bound to, cannot be read');
  }
  if (facts.redisMode === 'cluster') {
    throw refuse(
      'it is a Redis Cluster node, whose markers are per slot: this check covers standalone servers only; ' +
        'let the cluster abstain once for restartGuard',
    );
  }
  if (facts.role !== undefined && facts.role !== 'master') {
    throw refuse(`it is a replica of ${facts.primary ?? 'another server'}: mark its primary instead`);
  }
  const marker = (options.keyPrefix ?? DEFAULTS.keyPrefix) + GUARD_MARKER_NAME;
  const trusted = trustedAcrossRestarts(facts) ? '1' : '0';
  const reply = (await runScript(
    send,
    FRESH_NODE,
    [marker, marker + IDENTITY_SUFFIX],
    [trusted, GUARD_MARKER_NAME, String(MOST_KEYS)],
    { bySource: true },
  )) as [string, string, number?, string?];
  const [outcome, runId, others, named] = reply;
  if (outcome !== 'marked') {
    const some = (JSON.parse(String(named ?? '[]')) as string[]).map((key) => JSON.stringify(key));
    throw refuse(
      `it is not empty (${String(others)} ${Number(others) === 1 ? 'key' : 'keys'} other than the restart ` +
        `guard's own${some.length > 0 ? `, e.g. ${some.join(', ')}` : ''}), so it may have granted locks ` +
        'it no longer holds; a node that holds data, or restarted, waits out restartGuard instead',
    );
  }
  return { runId: String(runId), marker };
}

/**
 * {@link markFreshNode} for each of `keyPrefixes` on the server at `url` (`redis://` or `rediss://`,
 * `ca` for a server certificate outside Node's store), over a connection of its own with the client
 * package installed (ioredis, node-redis or Valkey GLIDE), closed after.
 * @throws NodeNotFreshError as markFreshNode does; Error when the node cannot be reached.
 */
export async function markFreshNodeAt(
  url: string,
  keyPrefixes: readonly string[],
  options: { readonly ca?: string | Buffer } = {},
): Promise<FreshNodeProof[]> {
  const tls = url.startsWith('rediss:') ? (options.ca ? { ca: options.ca } : {}) : undefined;
  const connection = openOneOff(url, CONNECT_MS, tls);
  const failed = await settleWithin(realRuntime, connection.connect(), CONNECT_MS).then(
    (connected) => (connected === TIMED_OUT ? ` within ${CONNECT_MS} ms` : undefined),
    (err: unknown) => `: ${err instanceof Error ? err.message : String(err)}`,
  );
  if (failed !== undefined) {
    connection.abort();
    throw new Error(`cannot connect to ${redactUrl(url)}${failed}`);
  }
  try {
    const proofs: FreshNodeProof[] = [];
    for (const keyPrefix of keyPrefixes) {
      proofs.push(await markFreshNode(connection.send, { keyPrefix, label: redactUrl(url) }));
    }
    return proofs;
  } finally {
    await connection.close();
  }
}
