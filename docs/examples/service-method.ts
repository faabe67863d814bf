// Examples shown in README.md. They are type-checked by `npm run lint` (tsc) and a test checks that
// every TypeScript block of the README appears here verbatim.
import { Injectable } from '@nestjs/common';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';

@Injectable()
export class ReportJob {
  @DistributedLock('nightly-report', { wait: 0 })
  async run(@FencingToken() token?: number): Promise<void> {
    // Called in every instance: one runs it, the others get LockNotAcquiredError at once.
    void token;
  }
}
