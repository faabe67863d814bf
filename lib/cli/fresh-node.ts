import { NodeNotFreshError } from '../core/errors.js';
import { markFreshNodeAt } from '../core/guards/fresh-node.js';
import { DEFAULTS } from '../core/options.js';
import { redactUrl } from '../core/transport/urls.js';

/** Where the command writes: lines for the user, and lines about failures. */
export interface CommandOutput {
  log(line: string): void;
  error(line: string): void;
}

export const FRESH_NODE_USAGE =
  'Usage: nest-quorum-lock fresh-node <redis-url>... [--key-prefix <prefix>]...\n' +
  'Records Redis nodes created just now, and still empty, as fresh, so that the restart guard lets them\n' +
  "vote at once instead of abstaining for restartGuard. The record names each server's run_id: if a node\n" +
  "restarts later it abstains as usual. Refuses a node that holds any key but the restart guard's own.\n" +
  `--key-prefix: the application's keyPrefix (default ${DEFAULTS.keyPrefix}); repeat it for several.\n` +
  'Never for a node that restarted or holds data: the guard waits so that locks it forgot stay safe.';

/**
 * `nest-quorum-lock fresh-node <url>... [--key-prefix <p>]...`: records each node as fresh
 * (markFreshNode). Resolves the exit code: 0 every node recorded, 1 one was refused or could not be
 * reached (the others are still tried), 2 bad arguments.
 */
export async function freshNodeCommand(args: readonly string[], out: CommandOutput): Promise<number> {
  const urls: string[] = [];
  const prefixes: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--key-prefix' || arg.startsWith('--key-prefix=')) {
      const value = arg === '--key-prefix' ? args[++i] : arg.slice('--key-prefix='.length);
      if (value === undefined || value === '') {
        out.error(`--key-prefix needs a value.\n${FRESH_NODE_USAGE}`);
        return 2;
      }
      prefixes.push(value);
    } else if (arg === '--help' || arg === '-h') {
      out.log(FRESH_NODE_USAGE);
      return 0;
    } else if (/^rediss?:\/\//.test(arg)) {
      urls.push(arg);
    } else {
      out.error(
        `Not a redis:// or rediss:// URL, nor an option: ${JSON.stringify(redactUrl(arg))}.\n${FRESH_NODE_USAGE}`,
      );
      return 2;
    }
  }
  if (urls.length === 0) {
    out.error(`Name at least one node.\n${FRESH_NODE_USAGE}`);
    return 2;
  }
  if (prefixes.length === 0) prefixes.push(DEFAULTS.keyPrefix);
  let code = 0;
  for (const url of urls) {
    const label = redactUrl(url);
    try {
      const proofs = await markFreshNodeAt(url, prefixes);
      proofs.forEach((proof, i) =>
        out.log(
          `${label}: recorded as fresh for key prefix "${prefixes[i]}" (server run_id ${proof.runId}): it votes ` +
            'at once; if it restarts, it abstains for restartGuard as any restarted node does.',
        ),
      );
    } catch (err) {
      code = 1;
      const message = err instanceof Error ? err.message : String(err);
      // NodeNotFreshError and a failed connection name the node already.
      out.error(
        err instanceof NodeNotFreshError || message.includes(label) ? message : `${label}: ${message}`,
      );
    }
  }
  return code;
}
