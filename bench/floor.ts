import { Redis } from 'ioredis';

/**
 * The floor every quorum lock pays: one parallel PING to all nodes that resolves at the
 * majority-th reply (one round trip to a majority, no Lua, no lock). Plain ioredis clients with
 * default options, like the peers use.
 */
export class QuorumPing {
  readonly quorum: number;

  private constructor(private readonly clients: readonly Redis[]) {
    this.quorum = Math.floor(clients.length / 2) + 1;
  }

  static async connect(urls: readonly string[]): Promise<QuorumPing> {
    const clients = urls.map((url) => new Redis(url));
    for (const c of clients) c.on('error', () => undefined);
    await Promise.all(clients.map((c) => c.ping()));
    return new QuorumPing(clients);
  }

  /** One round: resolves at the quorum-th PONG, rejects once a majority can no longer answer. */
  round(): Promise<void> {
    return new Promise((resolve, reject) => {
      let ok = 0;
      let failed = 0;
      const total = this.clients.length;
      for (const client of this.clients) {
        client.ping().then(
          () => {
            if (++ok === this.quorum) resolve();
          },
          (err: unknown) => {
            if (++failed === total - this.quorum + 1)
              reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
      }
    });
  }

  close(): void {
    for (const c of this.clients) c.disconnect();
  }
}

/**
 * The floor of a hand-over: one client runs a script that PUBLISHes on every node, and another
 * connection per node (the next holder's subscriber) waits for the majority-th message. No lock,
 * no queue: what remains is the round trip from a release to the next holder, which any library
 * that wakes waiters through Redis pays at least.
 */
export class QuorumPublish {
  readonly quorum: number;
  private static readonly CHANNEL = 'bench:floor:hand-over';
  private static readonly SCRIPT = "return redis.call('PUBLISH', KEYS[1], ARGV[1])";
  private heard = 0;
  /** Each round publishes its own number: a late message of the round before does not count. */
  private rounds = 0;
  private onQuorum: (() => void) | undefined;

  private constructor(
    private readonly clients: readonly Redis[],
    private readonly subscribers: readonly Redis[],
    private readonly sha: string,
  ) {
    this.quorum = Math.floor(clients.length / 2) + 1;
    for (const sub of subscribers) {
      sub.on('message', (_channel: string, message: string) => {
        if (message === String(this.rounds) && ++this.heard === this.quorum) this.onQuorum?.();
      });
    }
  }

  static async connect(urls: readonly string[]): Promise<QuorumPublish> {
    const clients = urls.map((url) => new Redis(url));
    const subscribers = urls.map((url) => new Redis(url));
    for (const c of [...clients, ...subscribers]) c.on('error', () => undefined);
    await Promise.all(subscribers.map((s) => s.subscribe(QuorumPublish.CHANNEL)));
    const shas = await Promise.all(clients.map((c) => c.script('LOAD', QuorumPublish.SCRIPT)));
    return new QuorumPublish(clients, subscribers, shas[0] as string);
  }

  /** One hand-over: resolves when the majority-th subscriber got the message. */
  round(): Promise<void> {
    this.heard = 0;
    const message = String(++this.rounds);
    return new Promise((resolve) => {
      this.onQuorum = resolve;
      for (const c of this.clients)
        void c.evalsha(this.sha, 1, QuorumPublish.CHANNEL, message).catch(() => 0);
    });
  }

  close(): void {
    for (const c of [...this.clients, ...this.subscribers]) c.disconnect();
  }
}
