import { settleWithin, TIMED_OUT } from '../runtime.js';
import { decodeIdentityReply, fenceCounterPattern, IDENTITY_CHECK } from '../scripts/guards.js';
import { IDENTITY_SUFFIX } from '../scripts/keys.js';
import type { Transport } from '../transport/transport.js';
import { missingAclRules } from '../voter/acl-probe.js';
import { ensureFunctions, functionsFinding, FunctionsNotLoadedError } from '../voter/functions.js';
import { runScript } from '../voter/send.js';
import {
  checkServer,
  describeSoftware,
  readServerFacts,
  trustedAcrossRestarts,
  type Finding,
  type ServerFacts,
  type ServerSend,
} from '../voter/server.js';
import type { IdentitySettings, Shard } from './identity.js';

/*
 * The check a shard's new connection passes before it votes; the identity guard (identity.ts)
 * decides when it runs and which votes count. The server's facts are read, the FUNCTION library
 * loaded, the ACL probe and preflight review the server, then the identity check compares it with
 * the record beside its restart-guard marker (scripts/guards.ts).
 */

/** Reads, reviews and checks the server behind `shard`; resolves the ms it abstains (recorded). */
export async function admitShard(
  transport: Transport,
  voter: { readonly label: string },
  settings: IdentitySettings,
  shard: string,
  state: Shard,
  closed: () => boolean,
): Promise<number> {
  const { keyPrefix, wakeChannel } = settings;
  const send = (command: readonly string[]) => transport.send({ shard }, command);
  const label = shard === '' ? voter.label : `${voter.label} (shard ${shard})`;
  // Functions: loaded here, on the shard's new connection, before anything calls them (beside
  // the reads of the server's facts: no round trip more before the shard votes).
  const functions = settings.scripts === 'functions' ? loadFunctions(send, settings) : undefined;
  functions?.catch(() => undefined); // when the facts fail first, the check fails with them
  let facts = await readServerFacts(settings.runtime, send, transport.username, settings.timeoutMs);
  if (closed()) throw new Error('the engine closed');
  const unloaded = await functions;
  if (settings.preflight) {
    const pattern = wakeChannel.replace(/[^:]*$/, '*');
    // Bounded like every read of the check: a command on a connection that closed under it (a
    // Cluster re-forming) may never settle, and the check would then never end nor be retried.
    const probe = unloaded
      ? Promise.resolve([])
      : missingAclRules(send, keyPrefix, pattern, wakeChannel, settings.scripts);
    const missing = await settleWithin(settings.runtime, probe, settings.timeoutMs);
    if (missing === TIMED_OUT) throw new Error(`no reply to the ACL probe within ${settings.timeoutMs} ms`);
    facts = { ...facts, denied: [...new Set([...facts.denied, ...missing])] };
    const findings: Finding[] = checkServer(
      transport.clustered ? { ...facts, clusterEnabled: undefined, redisMode: undefined } : facts,
    );
    if (unloaded) findings.push(functionsFinding(unloaded, transport.username));
    const refusal = settings.preflight.review(state, voter, label, {
      serverId: facts.runId,
      server: describeSoftware([facts.software]),
      findings,
    });
    if (refusal) {
      state.refused = true;
      state.reason = refusal.message;
      throw new Error(refusal.message);
    }
  }
  if (unloaded) throw unloaded;
  const abstainMs = await checkIdentity(settings, send, label, facts, state, shard);
  state.runId = facts.runId;
  state.software = facts.software;
  if (abstainMs > 0) state.abstainUntil = settings.runtime.now() + abstainMs;
  return abstainMs;
}

/** Makes sure the server has the FUNCTION library; the refusal to load it, as preflight reports it. */
async function loadFunctions(send: ServerSend, settings: IdentitySettings) {
  const { runtime, timeoutMs } = settings;
  const ensured = await settleWithin(
    runtime,
    ensureFunctions(send).then(() => undefined, denied),
    timeoutMs,
  );
  if (ensured === TIMED_OUT) throw new Error(`no reply to FCALL_RO / FUNCTION LOAD within ${timeoutMs} ms`);
  return ensured;
}

/**
 * The identity check: how long `shard` abstains. At least the guard when this voter itself saw the
 * run_id change (another client may have updated the record first), unless the new server is
 * trusted across restarts; an abstention that still runs is never shortened.
 */
async function checkIdentity(
  settings: IdentitySettings,
  send: ServerSend,
  label: string,
  facts: ServerFacts,
  state: Shard,
  shard: string,
): Promise<number> {
  const { guardMs, logger, runtime, timeoutMs } = settings;
  if (guardMs <= 0) return 0;
  if (!facts.runId) {
    logger.warn(
      `Redis node ${label}: the identity guard is off for this node: INFO is denied to its ACL user, so a ` +
        'restart or failover that lost the newest writes cannot be told. Grant +info (see "Deploying safely").',
    );
    return 0;
  }
  const marker = settings.markerOf(shard);
  const trusted = trustedAcrossRestarts(facts);
  const args = [
    facts.runId,
    trusted ? '1' : '0',
    String(Math.ceil(guardMs)),
    fenceCounterPattern(settings.keyPrefix),
  ];
  const call = runScript(send, IDENTITY_CHECK, [marker, marker + IDENTITY_SUFFIX], args, {
    mode: settings.scripts,
    bySource: true,
  });
  const reply = await settleWithin(runtime, call, timeoutMs);
  if (reply === TIMED_OUT) throw new Error(`no reply to the identity check within ${timeoutMs} ms`);
  const check = decodeIdentityReply(reply);
  const sawChange = state.runId !== undefined && state.runId !== facts.runId && !trusted;
  const running = Math.max(0, state.abstainUntil - runtime.now());
  const abstainMs = Math.max(check.abstainMs, sawChange ? guardMs : 0, running);
  if (abstainMs > running) {
    const why =
      check.outcome === 'changed' || sawChange
        ? changedReason(check.previous, facts, check.countersDropped)
        : '';
    settings.onAbstention(shard, abstainMs, why);
  }
  return abstainMs;
}

/** A library that could not be loaded is a finding; anything else fails the check. */
function denied(err: unknown): FunctionsNotLoadedError {
  if (err instanceof FunctionsNotLoadedError) return err;
  throw err;
}

/** Why a node whose server changed abstains, for the log line and the 'node-abstaining' event. */
function changedReason(previous: string, facts: ServerFacts, dropped: number): string {
  const persistence =
    facts.appendonly === 'yes' ? `appendonly yes, appendfsync ${facts.appendfsync ?? '?'}` : 'appendonly no';
  const promoted = (facts.secondReplOffset ?? -1) >= 0 ? ', a replica promoted by a failover' : '';
  const short = (runId: string) => (runId.length > 8 ? `${runId.slice(0, 8)}…` : runId || '?');
  return (
    `its server is not the one that wrote its restart-guard marker (run_id ${short(previous)} then, ` +
    `${short(facts.runId ?? '')} now${promoted}; ${persistence}): a restart or failover may have lost its ` +
    `newest lock keys and fencing counters (${dropped} counters dropped: they start again from the ` +
    'clock; only appendonly yes + appendfsync always is trusted across restarts)'
  );
}
