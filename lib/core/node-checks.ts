import { clientKind, describeUnsupported, isPlainObject } from './clients/detect.js';
import type { RedisClientPackage } from './clients/types.js';
import { RedlockOptionsError } from './errors.js';
import { show } from './option-checks.js';
import { hasUnencodedCredentials, redactUrl } from './transport/urls.js';
import { isVoterFactory } from './voter/voter-api.js';

/**
 * Checks every entry of `nodes`; returns whether one of them (a URL, options) needs a client
 * package to open its connection. `client`: which package would open URLs, asked only for advice in
 * an error (undefined when none can be told).
 */
export function validateNodes(
  nodes: unknown,
  client: () => RedisClientPackage | undefined = () => undefined,
): boolean {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedlockOptionsError(
      'nodes',
      'no Redis node given',
      'Pass one or more independent masters, e.g. nodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"].',
    );
  }
  let needsPackage = false;
  nodes.forEach((node: unknown, i) => {
    if (typeof node === 'string') {
      checkUrlEncoding(node, `nodes[${i}]`, client);
      validateUrl(node, `nodes[${i}]`);
      needsPackage = true;
    } else if (node === null || typeof node !== 'object') {
      throw new RedlockOptionsError(`nodes[${i}]`, `got ${show(node)}`, NODE_FIX);
    } else if (isVoterFactory(node) || clientKind(node) !== undefined) {
      // a voter the caller builds, or a ready client: used as it is
    } else if (
      clientKind(node) === 'ioredis-cluster' ||
      Array.isArray((node as { cluster?: unknown }).cluster) ||
      ('cluster' in node && typeof node.cluster !== 'function')
    ) {
      validateClusterNode(node, `nodes[${i}]`);
      needsPackage = true;
    } else if (isPlainObject(node)) {
      needsPackage = true; // connection options, for the chosen client
    } else {
      // Neither a client we know nor options: never a silent connection to localhost:6379.
      const { what, hint } = describeUnsupported(node);
      throw new RedlockOptionsError(
        `nodes[${i}]`,
        `got ${what}, which is neither a supported Redis client nor an options object`,
        hint ? `${hint[0]!.toUpperCase()}${hint.slice(1)}.` : NODE_FIX,
      );
    }
  });
  return needsPackage;
}

const NODE_FIX =
  'Use a redis:// URL, connection options, an ioredis or iovalkey Redis or Cluster, a node-redis client (createClient) or ' +
  'cluster (createCluster), a Valkey GLIDE GlideClient or GlideClusterClient, or { cluster: [...] } for a ' +
  'Redis Cluster.';

function validateUrl(node: string, option: string): void {
  let url: URL;
  try {
    url = new URL(node);
  } catch {
    throw new RedlockOptionsError(
      option,
      'not a valid URL',
      'Use redis://[user:password@]host:port[/db] or rediss:// for TLS.',
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new RedlockOptionsError(
      option,
      `unsupported scheme "${url.protocol}"`,
      'Use redis://host:port, or rediss://host:port for TLS.',
    );
  }
  if (!url.hostname) {
    throw new RedlockOptionsError(option, 'the URL has no host', 'Use redis://host:port.');
  }
}

/**
 * A URL whose password (or user name) holds an unencoded `@`, `#`, `/`, `?` or space: URL parsers
 * end the credentials or the host early there, so the host is read from part of the password
 * (`redis://:p@ss#1@10.0.0.1:6379` connects to host `ss` with password `p`, and the DNS error then
 * shows part of the secret). Never logged: the message shows the URL redacted.
 */
function checkUrlEncoding(node: string, option: string, client: () => RedisClientPackage | undefined): void {
  if (!hasUnencodedCredentials(node) && !node.includes('#')) return;
  throw new RedlockOptionsError(
    option,
    `${redactUrl(node)} has an unencoded "@", "#", "/", "?" or space in its user name or password (or a "#" ` +
      'elsewhere), so the host would be read from part of the password',
    'Percent-encode the user name and password, e.g. `redis://:${encodeURIComponent(password)}@host:6379` ' +
      `("@" is %40, "#" is %23, "/" is %2F, "?" is %3F), or pass ${OPTIONS_INSTEAD[client() ?? 'either']} ` +
      'instead of a URL.',
  );
}

/** Connection options without a URL, in the shape of the client that opens them. */
const OPTIONS_INSTEAD: Record<RedisClientPackage | 'either', string> = {
  ioredis: 'ioredis options { host, port, password }',
  'node-redis': 'node-redis options { socket: { host, port }, password }',
  either:
    'connection options: { host, port, password } with ioredis, { socket: { host, port }, password } with node-redis',
};

/** Checks a `{ cluster: [...], options? }` entry (an ioredis Cluster passed in is used as it is). */
function validateClusterNode(node: unknown, option: string): void {
  if (node !== null && typeof node === 'object' && clientKind(node) === 'ioredis-cluster') return;
  const { cluster, options } = node as { cluster: unknown; options?: unknown };
  const fix =
    'Use { cluster: [{ host: "10.0.0.1", port: 6379 }, ...], options?: ClusterOptions }, or an ioredis Cluster';
  if (!Array.isArray(cluster) || cluster.length === 0) {
    throw new RedlockOptionsError(`${option}.cluster`, 'no startup node given', fix);
  }
  cluster.forEach((entry: unknown, j) => {
    const port = (entry as { port?: unknown } | null)?.port;
    const ok =
      (typeof entry === 'number' && Number.isInteger(entry) && entry > 0) ||
      (typeof entry === 'string' && entry.length > 0) ||
      (entry !== null && typeof entry === 'object' && (port === undefined || Number.isInteger(port)));
    if (!ok) throw new RedlockOptionsError(`${option}.cluster[${j}]`, `got ${JSON.stringify(entry)}`, fix);
  });
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new RedlockOptionsError(
      `${option}.options`,
      `got ${String(options)}`,
      'Pass ioredis ClusterOptions, or leave it out',
    );
  }
  if (options && Array.isArray((options as { sentinels?: unknown }).sentinels)) {
    throw new RedlockOptionsError(
      `${option}.options`,
      'a Redis Cluster has no Sentinels',
      'A Sentinel-managed primary is a node of its own: { sentinels: [...], name: "mymaster" }',
    );
  }
}
