import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DistributedLock, FencingToken, LockNotAcquiredError } from 'nest-quorum-lock';
import type { SampleConfig } from '../config.js';
import { SAMPLE_CONFIG } from '../tokens.js';

/**
 * A periodic job that every instance schedules, but only one performs per period: the lock is
 * taken with `wait: 0`, so the instances that lose the race skip the run instead of queueing.
 */
@Injectable()
export class SettlementJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(SettlementJob.name);
  private timer: NodeJS.Timeout | undefined;
  /** Runs this instance performed / skipped because another instance held the lock. */
  readonly runs = { performed: 0, skipped: 0, lastToken: 0 };

  constructor(@Inject(SAMPLE_CONFIG) private readonly config: SampleConfig) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.tick(), this.config.settlementIntervalMs);
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  async tick(): Promise<void> {
    try {
      await this.settle();
    } catch (err) {
      if (err instanceof LockNotAcquiredError) this.runs.skipped++;
      else this.logger.error(`Settlement failed: ${(err as Error).message}`);
    }
  }

  /** The settlement itself; the lock is held for at least a second so other instances see it busy. */
  @DistributedLock('settlement', { wait: 0, ttl: 3000 })
  async settle(@FencingToken() token?: number): Promise<void> {
    this.runs.performed++;
    this.runs.lastToken = token!;
    this.logger.log(`Settlement run by ${this.config.instance} with fencing token ${token}`);
    await new Promise((resolve) => setTimeout(resolve, Math.min(1000, this.config.settlementIntervalMs / 2)));
  }
}
