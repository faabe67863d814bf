import { Redis, type RedisOptions } from 'ioredis';
import type { RedlockLogger } from './logger.js';
import type { RedlockNode } from './options.js';
import type { LuaScript } from './scripts.js';

interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Settings for connections the library opens itself. A dead node must fail fast instead of
 * queueing commands: the offline queue is off, and a command in flight when the connection drops
 * fails instead of being replayed after the lock decision was made.
 */
function ownedConnectionOptions(connectTimeout: number): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: Math.max(connectTimeout, 500),
    retryStrategy: (attempt: number) => Math.min(attempt * 100, 2000),
    // Our own subscriber connection is created with duplicate(), which copies these options.
  };
}

/** One Redis master as the engine sees it: a client, a log-safe label and its health. */
export class LockNode {
  /** Last connection problem, log-safe (never includes credentials). */
  lastError: string | undefined;
  /** Epoch ms until which the node abstains under the restart guard (0 = not abstaining). */
  abstainingUntil = 0;
  private corked = false;
  private readonly onError = (err: Error) => this.recordError(err);
  private readonly onReady = () => this.recordReady();

  private constructor(
    readonly client: Redis,
    readonly label: string,
    /** Whether the library opened this connection (and so must close it). */
    readonly owned: boolean,
    private readonly logger: RedlockLogger,
    /** Loaded on every (re)connection. */
    private readonly scripts: readonly LuaScript[],
  ) {
    client.on('error', this.onError);
    client.on('ready', this.onReady);
    if (client.status === 'ready') this.recordReady(); // a client passed in already connected
  }

  /** Builds a node from a URL, ioredis options or a ready client. */
  static from(
    node: RedlockNode,
    connectTimeout: number,
    logger: RedlockLogger,
    scripts: readonly LuaScript[],
  ): LockNode {
    if (node instanceof Redis) {
      const o = node.options;
      return new LockNode(
        node,
        `${o.tls ? 'rediss' : 'redis'}://${o.host}:${o.port}`,
        false,
        logger,
        scripts,
      );
    }
    const defaults = ownedConnectionOptions(connectTimeout);
    if (typeof node === 'string') {
      return new LockNode(new Redis(node, defaults), redactUrl(node), true, logger, scripts);
    }
    const options = { ...defaults, ...node };
    const label = `${options.tls ? 'rediss' : 'redis'}://${options.username ? `${options.username}@` : ''}${options.host ?? 'localhost'}:${options.port ?? 6379}`;
    return new LockNode(new Redis(options), label, true, logger, scripts);
  }

  /** Runs a script by SHA, loading it on NOSCRIPT (first use, or after the node restarted). */
  run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    this.coalesceWrites();
    return this.client.evalsha(script.sha, keys.length, ...keys, ...args).catch((err: unknown) => {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        return this.client.eval(script.source, keys.length, ...keys, ...args);
      }
      throw err;
    });
  }

  /**
   * Everything sent to this node in the current tick leaves in one socket write: the first
   * command corks the socket, and it is uncorked before the event loop goes on (process.nextTick).
   * Many concurrent locks then cost one syscall per node per tick; a lone call waits no longer
   * than its own synchronous code. (ioredis' auto-pipelining waits for setImmediate instead.)
   */
  private coalesceWrites(): void {
    if (this.corked) return;
    const stream = (this.client as unknown as { stream?: NodeJS.WritableStream & Partial<Corkable> }).stream;
    if (!stream?.cork || !stream.uncork || this.client.status !== 'ready') return;
    this.corked = true;
    stream.cork();
    process.nextTick(() => {
      this.corked = false;
      stream.uncork!();
    });
  }

  /**
   * Why a command to this node failed, log-safe. While the connection is down, ioredis only says
   * "Stream isn't writeable"; the connection's own last error (e.g. an authentication failure, a
   * refused connection or an untrusted certificate) is what the user needs to see.
   */
  failureReason(err: unknown): string {
    const message = describeError(err);
    if (this.client.status !== 'ready' && this.lastError !== undefined && this.lastError !== message) {
      return `not connected: ${this.lastError}`;
    }
    return message;
  }

  /** Resolves true once the connection is ready, false when `timeoutMs` passes first. */
  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.client.status === 'ready') return Promise.resolve(true);
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    return new Promise((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        resolve(ready);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.client.on('ready', onReady);
    });
  }

  /**
   * Closes the connection if we opened it; detaches our listeners from a client passed in.
   * QUIT waits for pending replies, at most `timeoutMs`: a hung (e.g. SIGSTOPped) node never
   * answers, and must not stall shutdown.
   */
  async close(timeoutMs: number): Promise<void> {
    if (this.owned && this.client.status !== 'end') {
      const ended = new Promise((resolve) => this.client.once('end', resolve));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.client.quit().catch(() => undefined),
        new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
      this.client.disconnect();
      // Resolve once the socket is closed, so nothing of ours outlives close().
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    }
    this.client.off('error', this.onError);
    this.client.off('ready', this.onReady);
  }

  private recordError(err: Error): void {
    const message = describeError(err);
    if (message !== this.lastError) this.logger.warn(`Redis node ${this.label} is unavailable: ${message}`);
    this.lastError = message;
  }

  private recordReady(): void {
    // A restarted node has lost its script cache: load ours now rather than on a NOSCRIPT storm.
    for (const script of this.scripts) this.client.script('LOAD', script.source).catch(() => undefined);
    if (this.lastError !== undefined) this.logger.log(`Redis node ${this.label} is reachable again`);
    this.lastError = undefined;
  }
}

/** A log-safe message for a node error: authentication failures say what to check. */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(message)) {
    return `authentication failed (${message.split('\n')[0]}); check the node's username and password`;
  }
  return message.split('\n')[0] ?? message;
}

/** `redis://user:secret@host:6379/0` -> `redis://user:***@host:6379/0`. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString().replace(/\/$/, '');
  } catch {
    return '<invalid url>';
  }
}
