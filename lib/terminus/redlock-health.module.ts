import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedlockHealthIndicator } from './redlock-health.indicator.js';

/**
 * Provides {@link RedlockHealthIndicator} to the module that imports it, the way Terminus's own
 * sample wires a custom indicator (a feature module that imports `TerminusModule` for
 * `HealthIndicatorService` and exports the indicator). `LockService` comes from the global
 * `RedlockModule`. Listing `RedlockHealthIndicator` in the `providers` of a module that imports
 * `TerminusModule` works as well.
 */
@Module({
  imports: [TerminusModule],
  providers: [RedlockHealthIndicator],
  exports: [RedlockHealthIndicator],
})
export class RedlockHealthModule {}
