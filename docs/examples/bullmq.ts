/**
 * A BullMQ job under a distributed lock, its result fenced (docs/fencing.md, "Queue jobs"). Run by
 * test/integration/bullmq/bullmq-fencing.spec.ts with real BullMQ workers on a real Redis, the
 * worker holding a job paused (SIGSTOP) past the lock's ttl.
 */
import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import { DistributedLock, FencingToken, LockSignal } from 'nest-quorum-lock';
import { FencedTable, type SqlHandle } from 'nest-quorum-lock/sql';

/** A payout job's data. */
export interface Payout {
  account: string;
  amount: number;
}

/** Moves money; takes the lock's signal, so that a call in flight ends when the lock is lost. */
export interface Bank {
  transfer(payout: Payout, signal: AbortSignal): Promise<string>;
}

export const PAYOUTS_DB = Symbol('PAYOUTS_DB'); // your SqlHandle: a pool, DataSource, PrismaClient...
export const BANK = Symbol('BANK');

/** One row per job: `payouts (id, status, reference, paid_with, fence_token)`. */
export const payouts = new FencedTable<{ status: string | null; reference: string | null }>({
  table: 'payouts',
});

/** BullMQ's job lock and this lock's ttl: one lease, renewed by both while a run goes on. */
export const PAYOUT_LEASE_MS = 30_000;

@Processor('payouts', { lockDuration: PAYOUT_LEASE_MS, stalledInterval: PAYOUT_LEASE_MS })
export class PayoutProcessor extends WorkerHost {
  private readonly logger = new Logger(PayoutProcessor.name);

  constructor(
    @Inject(PAYOUTS_DB) private readonly db: SqlHandle,
    @Inject(BANK) private readonly bank: Bank,
  ) {
    super();
  }

  // One run of a job at a time, also when BullMQ hands a stalled job to another worker.
  @DistributedLock('payout:{0.id}', { ttl: PAYOUT_LEASE_MS, wait: 2 * PAYOUT_LEASE_MS })
  async process(
    job: Job<Payout>,
    _bullToken?: string, // BullMQ's own lock token
    @LockSignal() signal?: AbortSignal,
    @FencingToken() token?: number,
  ): Promise<{ reference: string; token: number }> {
    const read = await payouts.read(this.db, job.id!, token!);
    if (!read.accepted) throw new Error(`payout ${job.id}: a newer run (token ${read.lastToken}) has it`);
    if (read.row.status === 'paid') return { reference: read.row.reference!, token: read.lastToken };
    const reference = await this.bank.transfer(job.data, signal!); // aborts with LockLostError
    signal!.throwIfAborted();
    const written = await payouts.write(this.db, job.id!, token!, { status: 'paid', reference });
    if (!written.accepted) {
      this.logger.warn(`payout ${job.id}: write refused, token ${written.lastToken} holds the row`);
      throw new Error(`payout ${job.id}: a newer run (token ${written.lastToken}) has it`);
    }
    return { reference, token: token! };
  }
}
