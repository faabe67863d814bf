import { redactUrl } from '../transport/urls.js';
import { realRuntime, settleWithin, TIMED_OUT } from '../runtime.js';
import type { ServerSend } from '../voter/server.js';
import { ioredisModule, nodeRedisModule, PACKAGE_NAME, tryLoad } from './load.js';

/*
 * One short-lived connection to one server for a one-off task outside an engine (the fresh-node
 * command, the test launchers' fresh-node record), with whichever client package is installed:
 * ioredis, else node-redis, else Valkey GLIDE. It never reconnects: a node down is an error, at once.
 */

/** A connection that sends commands, closed by its user. */
export interface CommandConnection {
  readonly send: ServerSend;
  close(): Promise<void>;
}

/** How {@link openCommandConnection} connects. */
export interface CommandConnectionOptions {
  /** Bound on connecting, ms. Default 5000. */
  readonly timeoutMs?: number;
  /** CA certificate(s) (PEM) for a `rediss://` URL whose server certificate is not in Node's store. */
  readonly ca?: string | Buffer;
}

/** A connection being opened: `abort` ends it at once when opening failed. */
type Opening = CommandConnection & { connect(): Promise<unknown>; abort(): void };

interface IoredisLike {
  connect(): Promise<unknown>;
  call(command: string, ...args: string[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
}

interface GlideLike {
  customCommand(args: string[]): Promise<unknown>;
  close(): void;
}

interface GlideFactory {
  createClient(config: object): Promise<GlideLike>;
}

interface NodeRedisLike {
  connect(): Promise<unknown>;
  sendCommand(command: string[]): Promise<unknown>;
  destroy(): void;
  on(event: 'error', listener: (err: unknown) => void): unknown;
}

/** Connects to `url` (`redis://` or `rediss://`, credentials in it); rejects with why when it cannot. */
export async function openCommandConnection(
  url: string,
  options: CommandConnectionOptions = {},
): Promise<CommandConnection> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const tls = url.startsWith('rediss:') ? (options.ca ? { ca: options.ca } : {}) : undefined;
  let connection: Opening;
  const glide = tryLoad(PACKAGE_NAME.glide) as { GlideClient?: GlideFactory } | undefined;
  const either =
    tryLoad(PACKAGE_NAME.ioredis) !== undefined || tryLoad(PACKAGE_NAME['node-redis']) !== undefined;
  if (!either && glide?.GlideClient) {
    connection = glideConnection(glide.GlideClient, url, timeoutMs);
  } else if (
    tryLoad(PACKAGE_NAME.ioredis) !== undefined ||
    tryLoad(PACKAGE_NAME['node-redis']) === undefined
  ) {
    const { Redis } = ioredisModule<{ Redis: new (url: string, options: object) => IoredisLike }>();
    const client = new Redis(url, {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      ...(tls ? { tls } : {}),
    });
    let lastError: unknown;
    client.on('error', (err: unknown) => (lastError = err)); // the socket's own error: why connect() failed
    connection = {
      connect: () => client.connect().catch((err: unknown) => Promise.reject(lastError ?? err)),
      send: ([command, ...args]) => client.call(command!, ...args),
      close: () =>
        client.quit().then(
          () => undefined,
          () => client.disconnect(),
        ),
      abort: () => client.disconnect(),
    };
  } else {
    const { createClient } = nodeRedisModule<{ createClient(options: object): NodeRedisLike }>();
    const client = createClient({
      url,
      socket: { connectTimeout: timeoutMs, reconnectStrategy: false, ...(tls ?? {}) },
    });
    client.on('error', () => undefined);
    connection = {
      connect: () => client.connect(),
      send: (command) => client.sendCommand([...command]),
      close: () => Promise.resolve(client.destroy()),
      abort: () => client.destroy(),
    };
  }
  const connected = await settleWithin(realRuntime, connection.connect(), timeoutMs).catch((err: unknown) => {
    connection.abort();
    throw new Error(
      `cannot connect to ${redactUrl(url)}: ${err instanceof Error ? err.message : String(err)}`,
    );
  });
  if (connected === TIMED_OUT) {
    connection.abort();
    throw new Error(`cannot connect to ${redactUrl(url)} within ${timeoutMs} ms`);
  }
  return { send: connection.send, close: connection.close };
}

/** A GLIDE client for `url` (GLIDE takes no URL: its parts become the configuration). */
function glideConnection(factory: GlideFactory, url: string, timeoutMs: number): Opening {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  const username = decodeURIComponent(parsed.username);
  const db = Number(parsed.pathname.slice(1) || '0');
  let client: GlideLike | undefined;
  return {
    connect: async () => {
      client = await factory.createClient({
        addresses: [{ host: parsed.hostname, port: Number(parsed.port || 6379) }],
        useTLS: parsed.protocol === 'rediss:',
        requestTimeout: timeoutMs,
        ...(password ? { credentials: { password, ...(username ? { username } : {}) } } : {}),
        ...(db > 0 ? { databaseId: db } : {}),
      });
    },
    send: (command) => client!.customCommand([...command]),
    close: () => Promise.resolve(client?.close()),
    abort: () => client?.close(),
  };
}
