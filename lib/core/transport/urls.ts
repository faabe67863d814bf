/*
 * Redis URLs, client-neutral: their credentials, found where a reader (or a URL parser) would end
 * them, and their log-safe form.
 */

/**
 * The credentials of a URL: everything between `//` and the LAST `@` (a password with an unencoded
 * `@` or `#` still ends there), or undefined when the URL has none.
 */
export function urlCredentials(raw: string): { start: number; end: number } | undefined {
  const slashes = raw.indexOf('//');
  const at = raw.lastIndexOf('@');
  return slashes >= 0 && at > slashes ? { start: slashes + 2, end: at } : undefined;
}

/** Whether the credentials hold a character that only percent-encoded belongs there. */
export function hasUnencodedCredentials(raw: string): boolean {
  const credentials = urlCredentials(raw);
  return credentials !== undefined && /[@#/?\s]/.test(raw.slice(credentials.start, credentials.end));
}

/**
 * `redis://user:secret@host:6379/0` -> `redis://user:***@host:6379/0`. Everything between `//` and
 * the last `@` is masked (the user name is kept only when the credentials are well-formed), so that
 * a malformed URL shows no part of its password; so is a `password=` in the query string.
 */
export function redactUrl(raw: string): string {
  let redacted = raw.replace(/([?&]password=)[^&#]*/gi, '$1***');
  const credentials = urlCredentials(redacted);
  if (credentials) {
    const text = redacted.slice(credentials.start, credentials.end);
    const colon = text.indexOf(':');
    const user = !hasUnencodedCredentials(redacted) && colon >= 0 ? text.slice(0, colon + 1) : '';
    redacted = `${redacted.slice(0, credentials.start)}${user}***${redacted.slice(credentials.end)}`;
  }
  return redacted.replace(/\/$/, '');
}

/** `host:port` of a Cluster's startup node in any form ioredis takes (a port, a URL, an object). */
export function addressOf(node: unknown): string {
  if (typeof node === 'number') return `localhost:${node}`;
  if (typeof node === 'string') {
    if (/^\d+$/.test(node)) return `localhost:${node}`;
    return redactUrl(node.includes('://') ? node : `redis://${node}`).replace(/^rediss?:\/\/([^@]*@)?/, '');
  }
  const { host, port } = node as { host?: string; port?: number };
  return `${host ?? 'localhost'}:${port ?? 6379}`;
}
