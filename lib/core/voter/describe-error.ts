/** First delay before a connection that failed authentication (or an ACL check) tries again, ms. */
export const FAULT_RETRY_MS = 1000;
/** The back-off after such failures doubles up to this, ms: a rotated password is picked up within it. */
export const MAX_FAULT_RETRY_MS = 15_000;

/** The delay before try `failures` (1, 2, ...) after authentication or permission failures in a row. */
export function faultRetryMs(failures: number): number {
  return Math.min(FAULT_RETRY_MS * 2 ** Math.max(0, failures - 1), MAX_FAULT_RETRY_MS);
}

/**
 * Errors that say what to fix: the node refused the credentials (WRONGPASS, NOAUTH), its ACL user
 * may not run a command the lock needs (NOPERM), or the host name does not resolve (yet).
 */
export type NodeFault = 'auth' | 'permission' | 'dns';

/** An error's message (also of an Error from another realm, e.g. Node's own in a VM context). */
function messageOf(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(err);
}

export function nodeFault(err: unknown): NodeFault | undefined {
  const message = messageOf(err);
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(message)) return 'auth';
  if (/\bNOPERM\b/.test(message)) return 'permission';
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || /\b(ENOTFOUND|EAI_AGAIN)\b/.test(message)) return 'dns';
  return undefined;
}

/**
 * Authentication and permission refusals are final until someone changes the node's settings:
 * nothing is gained by waiting for them (connectTimeout), and they are asked again with a back-off.
 */
export function isFinalFault(fault: NodeFault | undefined): boolean {
  return fault === 'auth' || fault === 'permission';
}

/**
 * A log-safe message for a node error (the reason in statuses and `QuorumUnavailableError`):
 * authentication, permission and host-name failures say so, and what to check.
 */
export function describeError(err: unknown): string {
  const raw = messageOf(err);
  const message = (raw.split('\n')[0] ?? raw).replace(/^Ready check failed: /, '');
  switch (nodeFault(err)) {
    case 'auth':
      return `authentication failed (${message}): check the user name and password given for this node`;
    case 'permission':
      return `permission denied (${message}): its ACL user lacks a rule the lock needs`;
    case 'dns':
      return `host name not found (${message})`;
    default:
      return message;
  }
}

/** The one WARN line for a node error: what happened, what to fix, and what the engine does meanwhile. */
export function nodeErrorLine(label: string, err: unknown): string {
  const reason = describeError(err);
  switch (nodeFault(err)) {
    case 'auth':
      return (
        `Redis node ${label} refused the credentials: ${reason} (percent-encoded in a URL). It does not vote; ` +
        `the engine asks again after ${FAULT_RETRY_MS / 1000} s, doubling up to ${MAX_FAULT_RETRY_MS / 1000} s, so ` +
        'a corrected or rotated password is picked up without a restart.'
      );
    case 'permission':
      return (
        `Redis node ${label} refused a command: ${reason}. Grant the rules of "A minimal ACL for the lock user" ` +
        '(docs/deploying.md). It does not vote until then; the engine asks again with a back-off.'
      );
    case 'dns':
      return (
        `Redis node ${label}: ${reason}. The engine keeps trying (names may appear late while a deployment ` +
        'starts); check the host name if this lasts.'
      );
    default:
      return `Redis node ${label} is unavailable: ${reason}`;
  }
}
