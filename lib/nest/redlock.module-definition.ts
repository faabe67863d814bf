import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedlockOptions } from '../core/index.js';

/** Options of the NestJS layer, beside the engine's. */
export interface RedlockNestOptions {
  /**
   * Send lock details to clients (default false): the lock keys and the lock error's own message
   * (`resources` and `detail` in a 409 / 503 body and in RPC, WebSocket and GraphQL payloads).
   * By default clients get a short message that agrees with `Retry-After`, and the details go to
   * the log. For development and internal APIs only: keys may carry identifiers.
   */
  exposeLockDetails?: boolean;
}

/** Options of `RedlockModule.forRoot` / the factory of `forRootAsync`. */
export type RedlockModuleOptions = RedlockOptions & RedlockNestOptions;

/** Extra options of forRoot / forRootAsync. */
export interface RedlockModuleExtras {
  /**
   * Register LockService for every module (default true): `@DistributedLock` works on providers
   * of any module without importing RedlockModule again (a second forRoot would open a second set
   * of connections).
   */
  isGlobal?: boolean;
}

export const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } =
  new ConfigurableModuleBuilder<RedlockModuleOptions>({ moduleName: 'Redlock' })
    .setClassMethodName('forRoot')
    .setFactoryMethodName('createRedlockOptions')
    .setExtras<RedlockModuleExtras>({ isGlobal: true }, (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
    }))
    .build();

/** Injection token of the resolved module options. */
export const REDLOCK_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;
