// Examples shown in README.md. They are type-checked by `npm run lint` (tsc) and a test checks that
// every TypeScript block of the README appears here verbatim. The terminus integration test serves
// this controller and module over HTTP.
import { Controller, Get, Module } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { RedlockHealthIndicator, RedlockHealthModule } from 'nest-quorum-lock/terminus';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    // 200 while a quorum of Redis nodes votes ('degraded' if some node does not), 503 otherwise.
    return this.health.check([() => this.redlock.isHealthy()]);
  }
}

// RedlockModule.forRoot(...) is imported once, in the root module (it is global).
@Module({
  imports: [TerminusModule, RedlockHealthModule],
  controllers: [HealthController],
})
export class HealthModule {}
