import { Logger, Module, type Provider } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { Redlock, RedlockOptionsError } from '../core/index.js';
import { DistributedLockExplorer } from './distributed-lock.explorer.js';
import { LockErrorInterceptor } from './lock-error.interceptor.js';
import { LockService } from './lock.service.js';
import { RedlockLifecycle } from './redlock.lifecycle.js';
import {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN,
  type RedlockModuleOptions,
} from './redlock.module-definition.js';

/** The engine, built from the module options: bad options (the NestJS layer's too) fail here, at bootstrap. */
const engineProvider: Provider = {
  provide: Redlock,
  inject: [MODULE_OPTIONS_TOKEN],
  useFactory: (options: RedlockModuleOptions) => {
    const { exposeLockDetails, ...engineOptions } = options ?? ({} as RedlockModuleOptions);
    if (exposeLockDetails !== undefined && typeof exposeLockDetails !== 'boolean') {
      throw new RedlockOptionsError(
        'exposeLockDetails',
        `got ${String(exposeLockDetails)}`,
        'Use true or false.',
      );
    }
    return new Redlock({ logger: new Logger('Redlock'), ...engineOptions });
  },
};

/**
 * Distributed locks over N independent Redis masters (Redlock) with fencing tokens.
 *
 * ```ts
 * @Module({ imports: [RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'] })] })
 * export class AppModule {}
 * ```
 * `forRootAsync({ imports, inject, useFactory | useClass | useExisting })` reads them from configuration.
 * Registers {@link LockService}, the engine (`Redlock`) and an interceptor that maps lock errors to
 * HTTP 409 / 503. Global unless `isGlobal: false`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    DistributedLockExplorer,
    engineProvider,
    RedlockLifecycle,
    LockService,
    { provide: APP_INTERCEPTOR, useClass: LockErrorInterceptor },
  ],
  exports: [LockService, Redlock],
})
export class RedlockModule extends ConfigurableModuleClass {}
