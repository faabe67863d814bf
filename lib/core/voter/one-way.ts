/*
 * One-way script calls: a script whose reply nobody reads (letting go of lock keys: a release, a
 * failed attempt's clean-up, a waiter leaving the line), sent so that the server sends no reply.
 *
 * `CLIENT REPLY SKIP` before the call tells the server to skip the reply to the next command, the
 * call's error included, and to send none for itself. Each reply costs a socket write and a wake-up
 * of this process on the server's side and a read on ours: in an uncontended acquire + release,
 * the five release replies are a quarter of the messages of the cycle. Without replies, the
 * release is on the wire once written: the holder does not wait for a round trip to let go.
 *
 * The two commands are written to the connection's socket directly, in one write, so that they
 * reach the server in the connection's order (behind every command sent before, ahead of every
 * command sent after) and ioredis never expects a reply for them: its reply queue stays as it was.
 * This is only sound on a connection nobody else writes to (a MULTI of someone else's could
 * enclose them) and whose user may run `CLIENT REPLY` (a refusal would be a reply ioredis reads as
 * the answer to its next command): RedisVoter checks both first (see oneWayAllowed).
 */

/** `CLIENT REPLY SKIP` in the protocol: the server sends no reply to the next command. */
const SKIP_NEXT_REPLY = '*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n';

/** A bulk string of the protocol. */
function bulk(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}

/** The last call encoded: a release asks every voter with the same one, in a row. */
let last: { sha: string; keys: readonly string[]; args: readonly string[]; wire: string } | undefined;

/**
 * `CLIENT REPLY SKIP` and `EVALSHA sha keys args` as the bytes to write, shared by the voters
 * asked in a row with the same arrays (one string per release, not one per voter).
 */
export function oneWayScriptCall(sha: string, keys: readonly string[], args: readonly string[]): string {
  if (last && last.sha === sha && last.keys === keys && last.args === args) return last.wire;
  let wire = `${SKIP_NEXT_REPLY}*${3 + keys.length + args.length}\r\n$7\r\nEVALSHA\r\n${bulk(sha)}${bulk(String(keys.length))}`;
  for (const key of keys) wire += bulk(key);
  for (const arg of args) wire += bulk(arg);
  last = { sha, keys, args, wire };
  return wire;
}

/**
 * Whether the server lets this connection's user skip replies: `CLIENT REPLY ON` (the mode every
 * connection starts in) answers OK where `CLIENT REPLY SKIP` is allowed too, and an error where
 * the ACL denies it or a proxy in between does not know it. Never rejects.
 */
export function oneWayAllowed(client: { call(...args: string[]): Promise<unknown> }): Promise<boolean> {
  return client.call('CLIENT', 'REPLY', 'ON').then(
    (reply) => reply === 'OK',
    () => false,
  );
}
