import { FencedWriter } from '../../fencing/fenced-writer.js';
import { MemoryServer } from '../memory/server.js';

/**
 * A {@link FencedWriter} over Redis hashes kept in memory, for unit tests: the real writer's code
 * (the same checks, errors and results) over a store that answers its scripts as Redis does. The
 * rule is the same: a read or write whose token is lower than one that has already read or written
 * the hash is refused and changes nothing, and a fenced read records its token. `RedlockTestingModule`
 * provides one under the `FencedWriter` token (and this class), so a service that injects
 * `FencedWriter` gets it without a fake:
 *
 * ```ts
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot()],
 *   providers: [AccountsService], // constructor(private readonly store: FencedWriter)
 * }).compile();
 * moduleRef.get(InMemoryFencedWriter).seed('account:1', { balance: 100 });
 * ```
 */
export class InMemoryFencedWriter extends FencedWriter {
  /** The hashes, on a server of its own that answers the writer's scripts (EVALSHA, NOSCRIPT, EVAL). */
  private readonly server: MemoryServer;

  /** @param fenceField the hash field that keeps the highest token seen (as the real writer's). */
  constructor(fenceField = 'fence') {
    // Named, so that it takes no number from the default names of the MemoryServers a test makes.
    const server = new MemoryServer({ name: 'in-memory-fenced-writer' });
    // An async function runs its body at once: each script is atomic, and an error reply rejects.
    super(undefined as never, fenceField, async (command) => server.call(command));
    this.server = server;
  }

  /**
   * The hash at `key` as `HGETALL` would return it, the fence field included (a fenced read creates
   * it: see docs/fencing.md, "A fenced read raises the token"), or `undefined` when there is none.
   */
  hashOf(key: string): Record<string, string> | undefined {
    const fields = this.server.hgetall(key);
    return fields.length > 0 ? Object.fromEntries(fields) : undefined;
  }

  /** Sets fields as the application's own setup would (a plain `HSET`, no token check). */
  seed(key: string, fields: Readonly<Record<string, string | number>>): this {
    for (const [field, value] of Object.entries(fields)) this.server.hset(key, field, String(value));
    return this;
  }

  /** Removes every hash. */
  clear(): void {
    this.server.flushAll();
  }
}
