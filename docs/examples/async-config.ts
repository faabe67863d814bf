import { Injectable, Module } from '@nestjs/common';
import { RedlockModule, type RedlockModuleOptions } from 'nest-quorum-lock';

// Stand-in for @nestjs/config's ConfigService, so the example needs no extra package.
@Injectable()
export class ConfigService {
  get(name: string): string | undefined {
    return process.env[name];
  }

  getOrThrow(name: string): string {
    const value = process.env[name];
    if (value === undefined) throw new TypeError(`Configuration key "${name}" does not exist`);
    return value;
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
        // getOrThrow: an unset REDLOCK_NODES stops the bootstrap naming the variable,
        // e.g. redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
        nodes: config.getOrThrow('REDLOCK_NODES').split(','),
        ttl: Number(config.get('REDLOCK_TTL') || 10_000),
        nodeTimeout: 50,
      }),
    }),
  ],
})
export class AsyncAppModule {}
