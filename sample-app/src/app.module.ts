import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Redis } from 'ioredis';
import { RedlockModule } from 'nest-quorum-lock';
import { AccountStore } from './accounts/account-store.js';
import { AccountRow } from './accounts/account.entity.js';
import { PostgresAccountStore } from './accounts/postgres-account-store.js';
import { RedisAccountStore } from './accounts/redis-account-store.js';
import { AccountsController } from './accounts/accounts.controller.js';
import { AccountsService } from './accounts/accounts.service.js';
import { AppEvents } from './app-events.js';
import type { SampleConfig } from './config.js';
import { DashboardController } from './dashboard/dashboard.controller.js';
import { DashboardFeed } from './dashboard/dashboard-feed.js';
import { LockClients, LockClientsModule } from './lock-clients.js';
import { SettlementJob } from './settlement/settlement.job.js';
import { StatusController } from './status/status.controller.js';
import { SAMPLE_CONFIG, STORE_REDIS } from './tokens.js';

/** Makes the sample configuration injectable (what ConfigModule would do in a larger app). */
@Module({})
class SampleConfigModule {
  static register(config: SampleConfig): DynamicModule {
    return {
      module: SampleConfigModule,
      providers: [{ provide: SAMPLE_CONFIG, useValue: config }],
      exports: [SAMPLE_CONFIG],
    };
  }
}

/** The account-withdrawal sample application. */
@Module({})
export class AppModule {
  static forRoot(config: SampleConfig): DynamicModule {
    const configModule = SampleConfigModule.register(config);
    return {
      module: AppModule,
      imports: [
        configModule,
        ...databaseModules(config, configModule),
        RedlockModule.forRootAsync({
          imports: [configModule, LockClientsModule],
          inject: [SAMPLE_CONFIG, LockClients],
          useFactory: async (c: SampleConfig, clients: LockClients) => ({
            // REDIS_CLIENT: ioredis (default), node-redis or glide.
            ...(await clients.options(c)),
            ttl: 2000,
            nodeTimeout: 100,
            // restartGuard: the production default. Fresh nodes are recorded as such on the nodes
            // (RedisNodes, `npx nest-quorum-lock fresh-node`), not switched here.
          }),
        }),
      ],
      controllers: [AccountsController, StatusController, DashboardController],
      providers: [...storeProviders(config), AccountsService, SettlementJob, AppEvents, DashboardFeed],
    };
  }
}

/**
 * PostgreSQL through TypeORM (how most NestJS apps reach it): `@nestjs/typeorm`'s DataSource, which
 * the module closes at shutdown. Nothing for the Redis store.
 */
function databaseModules(config: SampleConfig, configModule: DynamicModule): DynamicModule[] {
  if (config.store !== 'postgres') return [];
  return [
    TypeOrmModule.forRootAsync({
      imports: [configModule],
      inject: [SAMPLE_CONFIG],
      useFactory: (c: SampleConfig) => ({
        type: 'postgres' as const,
        url: c.databaseUrl!,
        entities: [AccountRow],
        // node-postgres pool: 10 connections, as before.
        extra: { max: 10 },
      }),
    }),
  ];
}

/** The accounts' store: PostgreSQL (default) or Redis, both behind the AccountStore token. */
function storeProviders(config: SampleConfig): Provider[] {
  if (config.store === 'postgres') return [{ provide: AccountStore, useClass: PostgresAccountStore }];
  return [
    {
      provide: STORE_REDIS,
      inject: [SAMPLE_CONFIG],
      useFactory: (c: SampleConfig) => new Redis(c.storeUrl!),
    },
    { provide: AccountStore, useClass: RedisAccountStore },
  ];
}
