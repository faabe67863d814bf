import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { Redlock, RedlockOptionsError } from '../core/index.js';
import type { DistributedLockMetadata } from './distributed-lock.decorator.js';
import { DISTRIBUTED_LOCK_METADATA } from './redlock.constants.js';

/**
 * Bootstrap check of every `@DistributedLock` method of the application's providers and
 * controllers (found through the metadata the decorator records, {@link DISTRIBUTED_LOCK_METADATA}):
 * its options must suit the engine the module built, so that a `ttl` above the module's
 * `restartGuard` or a negative `wait` fails the bootstrap naming the method, instead of every call
 * (every tick of a scheduled job) failing later. Decoration time cannot check this: the module's
 * options are not known then.
 */
@Injectable()
export class DistributedLockExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly redlock: Redlock,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      this.checkAll();
    } catch (err) {
      // A failed bootstrap leaves no connection open (the app is never closed).
      await this.redlock.close();
      throw err;
    }
  }

  private checkAll(): void {
    const seen = new Set<object>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype || seen.has(prototype)) continue;
      seen.add(prototype);
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const method = (prototype as Record<string, unknown>)[name];
        if (typeof method !== 'function') continue;
        const metadata = Reflect.getMetadata(DISTRIBUTED_LOCK_METADATA, method) as
          DistributedLockMetadata | undefined;
        if (metadata) this.check(`${prototype.constructor.name}.${name}`, metadata);
      }
    }
  }

  private check(where: string, { options }: DistributedLockMetadata): void {
    try {
      this.redlock.checkLockOptions(options);
    } catch (err) {
      if (!(err instanceof RedlockOptionsError)) throw err;
      // The same problem and fix, and where the option is written.
      throw new RedlockOptionsError(`@DistributedLock ${err.option} on ${where}`, err.problem, err.fix);
    }
  }
}
