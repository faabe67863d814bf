import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { REDLOCK_MODULE_OPTIONS, RedlockModule, type RedlockModuleOptions } from 'nest-quorum-lock';
import { RedlockTestingModule } from 'nest-quorum-lock/testing';
import { AsyncAppModule as AppModule, ConfigModule, ConfigService } from './async-config.js';

export async function e2eWithoutRedis(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
    .overrideProvider(REDLOCK_MODULE_OPTIONS)
    .useValue(RedlockTestingModule.inMemoryOptions()) // { ttl?, wait? } as for forRoot
    .compile();
  const app = moduleRef.createNestApplication();
  await app.init(); // the app's forRootAsync factory never runs; locks work in memory
  return app;
}

// app.module.ts: the import kept in a constant, so that a test can name the very same object
export const redlockImport = RedlockModule.forRootAsync({
  imports: [ConfigModule],
  inject: [ConfigService],
  useFactory: (config: ConfigService): RedlockModuleOptions => ({
    nodes: config.getOrThrow('REDLOCK_NODES').split(','),
  }),
});

@Module({ imports: [redlockImport] })
export class ConstantImportAppModule {}

export async function e2eWithTheSameObject(): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [ConstantImportAppModule] })
    .overrideModule(redlockImport) // the object itself: overrideModule compares identity
    .useModule(RedlockTestingModule.forRoot()) // also provides InMemoryLocks
    .compile();
  return moduleRef.createNestApplication().init();
}
