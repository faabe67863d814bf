import {
  ConflictException,
  Inject,
  Injectable,
  NotFoundException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { DistributedLock, FencingToken, LockSignal } from 'nest-quorum-lock';
import { AppEvents } from '../app-events.js';
import { SAMPLE_CONFIG } from '../tokens.js';
import type { SampleConfig } from '../config.js';
import { AccountStore, type Account } from './account-store.js';

/** Result of a withdrawal. */
export interface Withdrawal {
  readonly accountId: string;
  readonly amount: number;
  readonly balance: number;
  readonly token: number;
}

@Injectable()
export class AccountsService {
  constructor(
    private readonly store: AccountStore,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
    private readonly events: AppEvents,
  ) {}

  /**
   * Read the balance, call the (slow) payment provider, write the new balance. Without the lock
   * two concurrent withdrawals read the same balance and both succeed: a double spend. With it,
   * they run one at a time per account; the read and the write are both fenced, so a holder whose
   * lock expired while it was paused can write nothing once a newer holder has read the account.
   */
  @DistributedLock('account:{0}', { wait: 5000, ttl: 2000 })
  async withdraw(
    accountId: string,
    amount: number,
    @FencingToken() token?: number,
    @LockSignal() signal?: AbortSignal,
  ): Promise<Withdrawal> {
    const account = await this.store.readFenced(accountId, token!);
    if (account === undefined) throw new NotFoundException(`No account ${accountId}`);
    if (account === 'stale') {
      this.events.emit({ type: 'stale-rejected', account: accountId, fencingToken: token!, stage: 'read' });
      throw new ConflictException('A newer lock holder has already read this account.');
    }
    if (account.balance < amount) {
      throw new UnprocessableEntityException(
        `Insufficient funds: balance ${account.balance}, requested ${amount}`,
      );
    }
    await this.paymentProvider(signal!);
    const balance = account.balance - amount;
    if (!(await this.store.writeBalance(accountId, balance, token!))) {
      this.events.emit({ type: 'stale-rejected', account: accountId, fencingToken: token!, stage: 'write' });
      throw new ConflictException(
        'This instance lost the account lock while paying; the write was rejected.',
      );
    }
    return { accountId, amount, balance, token: token! };
  }

  async get(accountId: string): Promise<Account> {
    return this.mustGet(accountId);
  }

  open(accountId: string, balance: number): Promise<Account> {
    return this.store.open(accountId, balance);
  }

  private async mustGet(accountId: string): Promise<Account> {
    const account = await this.store.get(accountId);
    if (!account) throw new NotFoundException(`No account ${accountId}`);
    return account;
  }

  /** Stands in for an HTTP call to a payment provider; gives up if the lock is lost meanwhile. */
  private paymentProvider(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.config.paymentDelayMs);
      signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }
}
