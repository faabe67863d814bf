// Examples shown in README.md ("Scheduled jobs"). Type-checked by `npm run lint`; a test checks that
// every TypeScript block of the README appears here verbatim.
import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';

@Injectable()
export class ReportTask {
  @Cron('0 * * * * *') // every minute, in every instance
  @DistributedLock('report', { onBusy: 'skip', holdAtLeast: 30_000 })
  async report(@FencingToken() token?: number): Promise<void> {
    // One instance per tick gets here; the others skip it (a debug line, no error).
    await this.send(token!);
  }

  private async send(token: number): Promise<void> {
    void token; // e.g. a fenced write of the report
  }
}
