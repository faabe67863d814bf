// Examples shown in README.md. They are type-checked by `npm run lint` (tsc) and a test checks that
// every TypeScript block of the README appears here verbatim.
import { Controller, Injectable, Module, Param, Post } from '@nestjs/common';
import { DistributedLock, FencingToken, LockSignal, RedlockModule } from 'nest-quorum-lock';

@Module({
  imports: [
    RedlockModule.forRoot({
      nodes: ['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379'],
      ttl: 10_000, // lease in ms, extended automatically while the method runs
    }),
  ],
})
export class AppModule {}

@Controller('orders')
export class OrdersController {
  @Post(':id/pay')
  @DistributedLock('order:{0}', { wait: 2000 })
  async pay(@Param('id') id: string, @FencingToken() token: number, @LockSignal() signal: AbortSignal) {
    // Only one instance runs this per order at a time. Pass `token` to every write, `signal` to slow calls.
    return { id, token, aborted: signal.aborted };
  }
}

@Injectable()
export class ReportJob {
  @DistributedLock('nightly-report', { wait: 0 })
  async run(@FencingToken() token?: number): Promise<void> {
    // Every instance schedules this; one runs it, the others get LockNotAcquiredError at once.
    void token;
  }
}
