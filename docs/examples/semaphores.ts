// Examples shown in docs/semaphores.md. Type-checked by `npm run lint`; a test checks that every
// TypeScript block of the docs appears here verbatim.
import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { DistributedLock, FencingToken, LockService } from 'nest-quorum-lock';

interface Reports {
  buildAll(): Promise<void>;
}

interface Partner {
  post(body: unknown, fence: number): Promise<number>;
}

declare function renderOn(gpu: number, scene: string, fence: number): Promise<void>;

@Injectable()
export class ReportJobs {
  constructor(private readonly reports: Reports) {}

  // Every instance's cron fires; at most two build reports at once, the others skip this tick.
  @Cron('0 0 2 * * *')
  @DistributedLock('nightly-reports', { permits: 2, onBusy: 'skip' })
  async build(): Promise<void> {
    await this.reports.buildAll();
  }
}

@Injectable()
export class PartnerApi {
  constructor(private readonly partner: Partner) {}

  // At most 3 calls in flight to the partner's API, whichever instance makes them; the others
  // wait in line (first come, first served) up to 10 s.
  @DistributedLock('partner-api', { permits: 3, wait: 10_000 })
  async call(body: unknown, @FencingToken() token?: number): Promise<number> {
    return this.partner.post(body, token!);
  }
}

@Injectable()
export class GpuJobs {
  constructor(private readonly locks: LockService) {}

  render(scene: string): Promise<void> {
    return this.locks.using(
      'gpu',
      async (lock) => {
        // lock.permit: the slot held, 0..3 (undefined for a plain lock); lock.mode: 'write'.
        // lock.fencingToken increases per key AND permit.
        await renderOn(lock.permit!, scene, lock.fencingToken);
      },
      { permits: 4, wait: 30_000 },
    );
  }
}
