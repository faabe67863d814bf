import { ACL_PROBE } from '../scripts/acl-probe.js';
import { runScript } from './send.js';
import { type ScriptMode, type ServerSend } from './server.js';

export { ACL_PROBE };

/*
 * Which ACL rules the lock user lacks, found at bootstrap instead of at the first acquire (whose
 * error only says "the user executing the script can't run this command"): a script tries, with
 * redis.pcall, every command the engine's scripts call, on two scratch keys under the key prefix
 * and on a wake channel, and returns what was refused; the keys are left with a short expiry at
 * most. EVALSHA, EVAL and a key outside the user's key pattern are refused before the script runs,
 * with a NOPERM reply that names them (then the rest is unknown until they are granted).
 */

/**
 * The ACL rules the connection's user lacks for the lock (`+incr`, `~redlock:*`, `&__redlock_wake__:*`,
 * `+evalsha`...); empty when it has them all. The scratch keys share a hash tag: a Cluster's master
 * runs the probe too.
 */
export async function missingAclRules(
  send: ServerSend,
  keyPrefix: string,
  wakeChannelPattern: string,
  wakeChannel: string,
  mode: ScriptMode = 'eval',
): Promise<string[]> {
  const keys = [`${keyPrefix}{__preflight__}`, `${keyPrefix}{__preflight__}:z`];
  try {
    const missing = (await runScript(send, ACL_PROBE, keys, [wakeChannel], {
      mode,
      bySource: true,
    })) as string[];
    return missing.map((rule) => (rule === 'channel' ? `&${wakeChannelPattern}` : rule));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // Anything else (a cluster's CLUSTERDOWN or MOVED, a replica's READONLY...) is for the other
    // checks to report: the probe only looks for ACL denials.
    if (!message.startsWith('NOPERM')) return [];
    const command = /run the '([^']+)' command/.exec(message)?.[1];
    return [command ? `+${command}` : `~${keyPrefix}*`];
  }
}
