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
