import type { NodeConfigurationError } from '../../errors.js';
import type { RedlockLogger } from '../../logger.js';
import type { Preflight } from '../../preflight.js';
import {
  decodeIdentityReply,
  IDENTITY_CHECK,
  IDENTITY_SUFFIX,
  identityArgs,
  type IdentityCheck,
} from '../../scripts/identity.js';
import { GUARD_MARKER_NAME } from '../../keys.js';
import { wakeChannelOf } from '../../scripts/lock-value.js';
import type { ServerCommands } from '../server-commands.js';
import { settleWithin, TIMED_OUT } from '../../timeouts.js';
import { missingAclRules } from './acl-probe.js';
import {
  checkServer,
  describeSoftware,
  readServerFacts,
  trustedAcrossRestarts,
  type ServerFacts,
} from './preflight.js';

/**
 * What a Redis voter does on every (re)connection before it votes: read what the server says of
 * itself, have preflight review it, and run the identity check (scripts/identity.ts), which says
 * how long the node must abstain. A few ms, once per connection: the acquire path stays as it was.
 */

/** How soon a failed admission (a time-out, a replica refusing a write) is tried again. */
export const ADMISSION_RETRY_MS = 1000;

/** The engine's settings for admissions. */
export interface AdmissionSettings {
  /** Undefined when preflight is off. */
  readonly preflight: Preflight | undefined;
  /** restartGuard in ms (0: off, and so is the identity guard). */
  readonly guardMs: number;
  /** The restart-guard marker key (the identity record sits beside it). */
  readonly markerKey: string;
  /** Bound on the whole admission: a node that stops answering right after connecting. */
  readonly timeoutMs: number;
  readonly logger: RedlockLogger;
}

/** The outcome of one admission. */
export type Admission =
  | { readonly vote: true; readonly abstainMs: number; readonly why?: string }
  /** Refused by preflight (under 'error'): the node does not vote on this connection. */
  | { readonly vote: false; readonly refusal: NodeConfigurationError };

/**
 * Admits the server behind `server` (a ready connection) for `voter`. Rejects when the server
 * does not answer (a time-out, a dropped connection, a replica refusing the identity record's
 * write): the caller tries again.
 */
export async function admitServer(
  server: ServerCommands,
  voter: object,
  label: string,
  settings: AdmissionSettings,
): Promise<Admission> {
  const { preflight, guardMs } = settings;
  if (!preflight && guardMs <= 0) return { vote: true, abstainMs: 0 };
  let facts = await readServerFacts(server, settings.timeoutMs);
  if (preflight) {
    const prefix = settings.markerKey.slice(0, settings.markerKey.length - GUARD_MARKER_NAME.length);
    const probe = missingAclRules(server, prefix, `${wakeChannelOf('')}*`, wakeChannelOf('preflight'));
    const missing = await settleWithin(probe, settings.timeoutMs);
    if (missing === TIMED_OUT) throw new Error(`no reply to the ACL probe within ${settings.timeoutMs} ms`);
    facts = { ...facts, denied: [...new Set([...facts.denied, ...missing])] };
    const refusal = preflight.review(voter, label, {
      serverId: facts.runId,
      server: describeSoftware([facts.software]),
      findings: checkServer(facts),
    });
    if (refusal) return { vote: false, refusal };
  }
  return checkIdentity(server, label, facts, settings);
}

/**
 * The identity check (scripts/identity.ts) of the server behind `server`, whose facts were read
 * on this connection: how long it must abstain, and why. `markerKey` is the marker the record sits
 * beside: the engine's (`settings.markerKey`), or on a Redis Cluster a marker of one of the
 * shard's slots (ioredis-cluster/shard-identities.ts). Rejects as {@link admitServer} does.
 */
export async function checkIdentity(
  server: ServerCommands,
  label: string,
  facts: ServerFacts,
  settings: AdmissionSettings,
  markerKey = settings.markerKey,
): Promise<Admission & { readonly vote: true }> {
  const { guardMs } = settings;
  if (guardMs <= 0) return { vote: true, abstainMs: 0 };
  if (!facts.runId) {
    settings.logger.warn(
      `Redis node ${label}: the identity guard is off for this node: INFO is denied to its ACL user, so a ` +
        'restart or failover that lost the newest writes cannot be told. Grant +info (see "Deploying safely" ' +
        'in the README).',
    );
    return { vote: true, abstainMs: 0 };
  }
  const keys = [markerKey, markerKey + IDENTITY_SUFFIX];
  const args = identityArgs(facts.runId, trustedAcrossRestarts(facts), guardMs, settings.markerKey);
  const reply = await settleWithin(server.runScript(IDENTITY_CHECK, keys, args), settings.timeoutMs);
  if (reply === TIMED_OUT) throw new Error(`no reply to the identity check within ${settings.timeoutMs} ms`);
  const check = decodeIdentityReply(reply);
  if (check.abstainMs <= 0) return { vote: true, abstainMs: 0 };
  // A node without a marker (new, or lost its data), or whose marker still runs: the restart
  // guard's own reason, which the engine words for all such voters in one line (quorum/voters.ts).
  if (check.outcome !== 'changed') return { vote: true, abstainMs: check.abstainMs };
  return {
    vote: true,
    abstainMs: check.abstainMs,
    why: abstentionReason(check, facts),
  };
}

/** Why a node whose server changed abstains, for the log line and the 'node-abstaining' event. */
function abstentionReason({ previous, countersDropped }: IdentityCheck, facts: ServerFacts): string {
  const persistence =
    facts.appendonly === 'yes' ? `appendonly yes, appendfsync ${facts.appendfsync ?? '?'}` : 'appendonly no';
  const promoted = (facts.secondReplOffset ?? -1) >= 0 ? ', a replica promoted by a failover' : '';
  return (
    `its server is not the one that wrote its restart-guard marker (run_id ${short(previous)} then, ` +
    `${short(facts.runId ?? '')} now${promoted}; ${persistence}): a restart or failover may have lost its ` +
    `newest lock keys and fencing counters (${countersDropped} counters dropped: they start again from the ` +
    'clock; only appendonly yes + appendfsync always is trusted across restarts)'
  );
}

const short = (runId: string) => (runId.length > 8 ? `${runId.slice(0, 8)}…` : runId || '?');
