/**
 * Where a command goes: the shard that serves a key's slot, a shard by its id, or any shard.
 * A single server is a transport of one shard, whose id is ''.
 */
export type Route = { readonly key: string } | { readonly shard: string } | undefined;

/** What a transport tells its voter. */
export type TransportEvent =
  /** The transport can send commands again (after it was down), or for the first time. */
  | { readonly type: 'up' }
  /** It cannot: every command fails until 'up'. */
  | { readonly type: 'down'; readonly reason: string }
  /** An error of the client (logged by the voter once per kind). */
  | { readonly type: 'error'; readonly error: unknown }
  /**
   * `shard` has a new connection (its first, a reconnection, a new master): what the server
   * behind it is was not checked yet. Its epoch has changed.
   */
  | { readonly type: 'connected'; readonly shard: string };

/**
 * The narrow seam between the voter and one Redis client library: a transport only talks to its
 * client. Everything the lock does (scripts and their NOSCRIPT fallback, admission, the guards,
 * decoding, routing by slot) is the voter's, written once for every client.
 *
 * A standalone server is a transport with one shard; a Redis Cluster is one with a shard per
 * master. Commands are arrays of strings; replies are what the client decodes them to (RESP2 or
 * RESP3: the voter's decoders accept both).
 */
export interface Transport {
  /** Log-safe name (never a password). */
  readonly label: string;
  /** True for a Redis Cluster: scripts route by their first key, and their keys share one slot. */
  readonly clustered: boolean;
  /**
   * True when {@link epoch} changes on every reconnection. False for a client that reconnects
   * without a word (Valkey GLIDE): the voter then reads the server's run_id behind each vote.
   */
  readonly seesReconnects: boolean;
  /** True while commands can be sent. */
  readonly up: boolean;
  /** The client's last error, log-safe, while it is down. */
  readonly lastError: string | undefined;
  /** The ACL user the connection logs in as (undefined: `default`). */
  readonly username: string | undefined;
  /** The shards now, each with the slots it serves (a single server: one shard '' and no slots). */
  shards(): ReadonlyMap<string, readonly number[]>;
  /** The shard that serves `key` now; undefined when the transport knows of none. */
  shardOf(key: string): string | undefined;
  /** Changes whenever `shard`'s connection may have been replaced (see {@link seesReconnects}). */
  epoch(shard: string): number;
  /** Sends one command. Rejects on an error reply or a failed connection; never retries by itself. */
  send(route: Route, command: readonly string[]): Promise<unknown>;
  /**
   * Optional, for a transport that holds writes back (write batching): resolves once the commands
   * sent so far have been handed to the socket; undefined when they have. Called apart from the
   * transport (its voter passes it on as its own).
   */
  readonly written?: () => Promise<void> | undefined;
  /** Starts connecting when not yet; resolves whether it is up within `timeoutMs`. */
  connect(timeoutMs: number): Promise<boolean>;
  /** Hears the transport's events. */
  on(listener: (event: TransportEvent) => void): void;
  /**
   * Delivers what is published on `channel` from every shard (a Cluster: a subscriber per master,
   * since a script's PUBLISH counts the subscribers of its own node only). Resolves once subscribed
   * everywhere it can be; re-subscribes after reconnections by itself.
   */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  /**
   * Closes what the transport opened, and takes every listener and timer of its own off a client
   * passed in (which stays open: its owner closes it); bounded by `timeoutMs`.
   */
  close(timeoutMs: number): Promise<void>;
}

/**
 * A short-lived connection to one server for a one-off task outside an engine (the fresh-node
 * record), opened by a client folder (picked in pick.ts) and connected by its user: it never
 * reconnects, so a node down is an error at once.
 */
export interface OneOffConnection {
  /** Rejects with why it cannot connect (the client's own error). */
  connect(): Promise<unknown>;
  send(command: readonly string[]): Promise<unknown>;
  close(): Promise<void>;
  /** Ends it at once, when connecting failed or took too long. */
  abort(): void;
}
