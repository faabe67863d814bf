// The README's Quick start, file src/app.module.ts (README.md shows it from the first import on).
// Type-checked by `npm run lint`; a test checks that the README's block appears here verbatim, and
// the Quick start was verified by pasting it into a fresh app (see the commit that added it).
import { Controller, Module, Param, Post } from '@nestjs/common';
import { DistributedLock, FencingToken, LockSignal, RedlockModule } from 'nest-quorum-lock';

@Controller('orders')
export class OrdersController {
  @Post(':id/pay')
  @DistributedLock('order:{0}', { wait: 2000 })
  async pay(@Param('id') id: string, @FencingToken() token: number, @LockSignal() signal: AbortSignal) {
    // Only one instance runs this per order at a time. Pass `token` to every write, `signal` to slow calls.
    return { id, token, aborted: signal.aborted };
  }
}

@Module({
  imports: [
    RedlockModule.forRoot({
      // 3 or 5 independent Redis masters, e.g. redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
      nodes: process.env.REDLOCK_NODES?.split(',') ?? [],
      ttl: 10_000, // lease in ms, extended automatically while the method runs
    }),
  ],
  controllers: [OrdersController],
})
export class AppModule {}
