import { Injectable, Module } from '@nestjs/common';
import { RedlockModule, type RedlockModuleOptions } from 'nest-quorum-lock';

// Stand-in for @nestjs/config's ConfigService, so the example needs no extra package.
@Injectable()
export class ConfigService {
  get(name: string): string {
    return process.env[name] ?? '';
  }
}

@Module({ providers: [ConfigService], exports: [ConfigService] })
export class ConfigModule {}

@Module({
  imports: [
    RedlockModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService): RedlockModuleOptions => ({
        nodes: config.get('REDLOCK_NODES').split(','),
        ttl: Number(config.get('REDLOCK_TTL') || 10_000),
        nodeTimeout: 50,
      }),
    }),
  ],
})
export class AsyncAppModule {}
