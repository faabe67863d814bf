var __decorate = (this && this.__decorate) || function (decorators, target, key, desc) {
    var c = arguments.length, r = c < 3 ? target : desc === null ? desc = Object.getOwnPropertyDescriptor(target, key) : desc, d;
    if (typeof Reflect === "object" && typeof Reflect.decorate === "function") r = Reflect.decorate(decorators, target, key, desc);
    else for (var i = decorators.length - 1; i >= 0; i--) if (d = decorators[i]) r = (c < 3 ? d(r) : c > 3 ? d(target, key, r) : d(target, key)) || r;
    return c > 3 && r && Object.defineProperty(target, key, r), r;
};
import { Logger, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Redlock } from '../core/redlock.js';
import { LockErrorInterceptor } from './lock-error.interceptor.js';
import { LockService } from './lock.service.js';
import { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } from './redlock.module-definition.js';
/** The engine, built from the module options: bad options fail here, at bootstrap. */
const engineProvider = {
    provide: Redlock,
    inject: [MODULE_OPTIONS_TOKEN],
    useFactory: (options) => new Redlock({ logger: new Logger('Redlock'), ...options }),
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
let RedlockModule = class RedlockModule extends ConfigurableModuleClass {
};
RedlockModule = __decorate([
    Module({
        providers: [engineProvider, LockService, { provide: APP_INTERCEPTOR, useClass: LockErrorInterceptor }],
        exports: [LockService, Redlock],
    })
], RedlockModule);
export { RedlockModule };
//# sourceMappingURL=redlock.module.js.map