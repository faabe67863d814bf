// Examples shown in docs/deploying.md ("Shutdown"). Type-checked by `npm run lint`; a test checks
// that every TypeScript block of the docs appears here verbatim.
import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { DistributedLock, LockSignal } from 'nest-quorum-lock';

/** Where the import job reads batches from and writes them to. */
export interface Batches {
  batches(): Promise<string[][]>;
  write(batch: string[]): Promise<void>;
}

@Injectable()
export class ImportTask {
  constructor(
    private readonly source: Batches,
    private readonly target: Batches,
  ) {}

  @Cron('*/10 * * * * *')
  @DistributedLock('import', { onBusy: 'skip' })
  async import(@LockSignal() signal?: AbortSignal): Promise<void> {
    for (const batch of await this.source.batches()) {
      // Shutdown (EngineClosedError) or a lost lock (LockLostError): stop between batches.
      if (signal!.aborted) return;
      await this.target.write(batch);
    }
  }
}
