import type { Redis, RedisOptions } from 'ioredis';
import { clientKind } from '../../clients/detect.js';
import { ioredisModule } from '../../clients/load.js';
import { runScript, type LuaScript } from '../../scripts/index.js';
import type { ServerCommands } from '../server-commands.js';
import type { Corkable } from '../write-batching.js';
import { settleWithin } from '../../timeouts.js';
import { faultRetryMs, isFinalFault, nodeFault } from '../describe-error.js';

/**
 * Settings for connections the library opens itself. A dead node must fail fast instead of
 * queueing commands: the offline queue is off, and a command in flight when the connection drops
 * fails instead of being replayed after the lock decision was made. A node that refuses the
 * credentials is asked again with a back-off (`faults` counts such refusals in a row): the answer
 * is final until someone changes the password, which rotations do.
 */
function ownedConnectionOptions(connectTimeout: number, faults: { inARow: number }): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: Math.max(connectTimeout, 500),
    retryStrategy: (attempt: number) =>
      faults.inARow > 0 ? faultRetryMs(faults.inARow) : Math.min(attempt * 100, 2000),
    // Our own subscriber connection is created with duplicate(), which copies these options.
  };
}

/** Counts the authentication / permission refusals in a row of `client` (see ownedConnectionOptions). */
function countFaults(client: Redis, faults: { inARow: number }): Redis {
  client.on('error', (err: unknown) => {
    faults.inARow = isFinalFault(nodeFault(err)) ? faults.inARow + 1 : 0;
  });
  client.on('ready', () => {
    faults.inARow = 0;
  });
  return client;
}

/** A client for one node, its log-safe label, and whether the library owns (and so closes) it. */
export interface RedisConnection {
  readonly client: Redis;
  readonly label: string;
  readonly owned: boolean;
}

/** Opens (or adopts) the connection for a URL, ioredis options or a ready client. */
export function redisConnection(
  node: string | RedisOptions | Redis,
  connectTimeout: number,
): RedisConnection {
  if (typeof node === 'object' && clientKind(node) === 'ioredis') {
    const o = (node as Redis).options;
    return {
      client: node as Redis,
      label: `${o.tls ? 'rediss' : 'redis'}://${o.host}:${o.port}`,
      owned: false,
    };
  }
  // Loaded only now: an engine whose nodes are all clients passed in never loads ioredis.
  const { Redis } = ioredisModule<typeof import('ioredis')>();
  const faults = { inARow: 0 };
  const defaults = ownedConnectionOptions(connectTimeout, faults);
  if (typeof node === 'string') {
    return { client: countFaults(new Redis(node, defaults), faults), label: redactUrl(node), owned: true };
  }
  const options: RedisOptions = { ...defaults, ...(node as RedisOptions) };
  if (options.sentinels?.length) {
    // A Sentinel-managed primary: the address changes with failovers; the name does not.
    const sentinels = options.sentinels.map((s) => `${s.host ?? 'localhost'}:${s.port ?? 26379}`).join(',');
    return {
      client: countFaults(new Redis(options), faults),
      label: `sentinel://${sentinels}/${options.name ?? ''}`,
      owned: true,
    };
  }
  const user = options.username ? `${options.username}@` : '';
  const label = `${options.tls ? 'rediss' : 'redis'}://${user}${options.host ?? 'localhost'}:${options.port ?? 6379}`;
  return { client: countFaults(new Redis(options), faults), label, owned: true };
}

/**
 * The credentials of a URL, as the redaction and the option check read them: everything between
 * `//` and the LAST `@` (a password with an unencoded `@` or `#` still ends there), or undefined
 * when the URL has none.
 */
export function urlCredentials(raw: string): { start: number; end: number } | undefined {
  const slashes = raw.indexOf('//');
  const at = raw.lastIndexOf('@');
  return slashes >= 0 && at > slashes ? { start: slashes + 2, end: at } : undefined;
}

/** Whether credentials hold a character that only percent-encoded belongs there. */
export function hasUnencodedCredentials(raw: string): boolean {
  const credentials = urlCredentials(raw);
  if (!credentials) return false;
  return /[@#/?\s]/.test(raw.slice(credentials.start, credentials.end));
}

/**
 * `redis://user:secret@host:6379/0` -> `redis://user:***@host:6379/0`. Everything between `//` and
 * the last `@` is masked (the user name is kept only when the credentials are well-formed), so
 * that a malformed URL such as `redis://:p@ss#1@host:6379` shows no part of its password; so is a
 * `password=` in the query string.
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

/** What {@link quitConnection} needs of a connection: an ioredis `Redis` or `Cluster`. */
interface Quittable {
  readonly status: string;
  once(event: 'end', listener: () => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/**
 * QUIT (only on a live connection, at most `timeoutMs`: a paused node never answers, and must not
 * stall shutdown), then drop the socket(s) and wait for them to close, so that nothing of ours
 * outlives close(). For a single node and a Cluster alike.
 */
export async function quitConnection(client: Quittable, timeoutMs: number): Promise<void> {
  if (client.status === 'end') return;
  const ended = new Promise<void>((resolve) => client.once('end', resolve));
  if (client.status === 'ready') {
    await settleWithin(
      client.quit().catch(() => undefined),
      timeoutMs,
    );
  }
  // Between two tries (status 'reconnecting') there is no socket, only ioredis' timer, which
  // disconnect() clears: no 'end' follows, and waiting for it stalled close() by a second.
  const betweenTries = client.status === 'reconnecting';
  client.disconnect();
  if (!betweenTries) await settleWithin(ended, 1000);
}

/**
 * The connection that receives wake messages (a subscribed connection can run nothing else):
 * commands queue while it connects, and ioredis re-subscribes after a reconnect.
 */
export function subscriberConnection(client: Redis): Redis {
  const subscriber = client.duplicate({
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    lazyConnect: false,
  });
  subscriber.on('error', () => undefined); // the main connection already reports health
  return subscriber;
}

/** Loads `scripts` on the connection: true once all are loaded, false if one was refused. */
export function loadScripts(client: Redis, scripts: readonly LuaScript[]): Promise<boolean> {
  return Promise.all(scripts.map((script) => client.script('LOAD', script.source))).then(
    () => true,
    () => false,
  );
}

/** The client's socket, when it is ready and can be corked (ioredis keeps it in a private field). */
export function corkableStream(client: Redis): Corkable | undefined {
  const stream = (client as unknown as { stream?: Partial<Corkable> }).stream;
  return stream?.cork && stream.uncork && client.status === 'ready' ? (stream as Corkable) : undefined;
}

/** What admission asks of the server (server-commands.ts), through an ioredis connection. */
export function ioredisServer(client: Redis): ServerCommands {
  return {
    info: (section) => client.info(section),
    configGet: (parameter) => client.config('GET', parameter),
    runScript: (script, keys, args) => runScript(client, script, keys, args),
    username: client.options.username,
  };
}
