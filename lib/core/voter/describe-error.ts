/**
 * A log-safe message for an error a voter's server or client reported: its first line, and for
 * authentication failures what to check. For every client (the messages are the server's).
 */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(message)) {
    return `authentication failed (${message.split('\n')[0]}); check the node's username and password`;
  }
  return message.split('\n')[0] ?? message;
}
