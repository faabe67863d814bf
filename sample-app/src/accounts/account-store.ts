/** An account as stored: balance in cents, and the fencing token of the last holder that touched it. */
export interface Account {
  readonly id: string;
  readonly balance: number;
  readonly fence: number;
}

/** Fenced-read/write statistics of this instance (for the demo's table). */
export interface StoreStats {
  accepted: number;
  rejected: number;
}

/**
 * The application's database, behind one interface (and injection token) with two
 * implementations: PostgreSQL (the default, PostgresAccountStore) and Redis (RedisAccountStore).
 * Both fence reads and writes with the lock's token, so a paused instance that lost its lock can
 * neither overwrite a newer holder's balance nor write one computed before that holder's read.
 */
export abstract class AccountStore {
  readonly stats: StoreStats = { accepted: 0, rejected: 0 };

  /** The account, unfenced (for display). */
  abstract get(id: string): Promise<Account | undefined>;

  /**
   * Reads an account for a read-modify-write under the lock: records `token` as its newest
   * reader, so a paused older holder can no longer write a balance computed before this read.
   * Resolves `stale` when a newer holder has already read or written it.
   */
  abstract readFenced(id: string, token: number): Promise<Account | 'stale' | undefined>;

  /** Creates or resets an account (no fence check: an administrative write). */
  abstract open(id: string, balance: number): Promise<Account>;

  /** Writes the new balance unless a newer token has read or written the account. */
  abstract writeBalance(id: string, balance: number, token: number): Promise<boolean>;

  /** Counts a fenced read or write the store refused or accepted. */
  protected count(accepted: boolean): boolean {
    if (accepted) this.stats.accepted++;
    else this.stats.rejected++;
    return accepted;
  }
}
