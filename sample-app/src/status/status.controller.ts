import { Controller, Get, Inject } from '@nestjs/common';
import { LockService, type LockClusterStatus } from 'nest-quorum-lock';
import type { SampleConfig } from '../config.js';
import { AccountStore, type StoreStats } from '../accounts/account-store.js';
import { SettlementJob } from '../settlement/settlement.job.js';
import { SAMPLE_CONFIG } from '../tokens.js';

/** What `GET /status` answers. */
export interface StatusReport extends LockClusterStatus {
  readonly instance: string;
  readonly writes: StoreStats;
  readonly settlement: SettlementJob['runs'];
}

@Controller('status')
export class StatusController {
  constructor(
    private readonly locks: LockService,
    private readonly store: AccountStore,
    private readonly settlement: SettlementJob,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /** Each lock node (reachable or not), the quorum, and this instance's counters. */
  @Get()
  async status(): Promise<StatusReport> {
    return {
      instance: this.config.instance,
      ...(await this.locks.probe()),
      writes: this.store.stats,
      settlement: this.settlement.runs,
    };
  }
}
