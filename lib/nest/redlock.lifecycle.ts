import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redlock } from '../core/index.js';
import { LockService } from './lock.service.js';

/**
 * The one owner of the engine's lifecycle: waits for the node connections at module init (bounded
 * by `connectTimeout`, so the first acquire works) and, at application shutdown, stops watchdogs,
 * releases the locks still held and closes the connections the module opened. `LockService` is a
 * facade over the engine and has no lifecycle of its own, so the engine is closed also when a test
 * replaces `LockService` with a double, and its connections never keep the process alive.
 */
@Injectable()
export class RedlockLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(
    private readonly redlock: Redlock,
    /** The real service, or a test's double (`overrideProvider(LockService)`). */
    private readonly locks: LockService,
  ) {}

  async onModuleInit(): Promise<void> {
    // A test that replaced LockService with a double does not use the nodes: it must not wait
    // `connectTimeout` for them (nor fail on them) at bootstrap.
    if (!(this.locks instanceof LockService)) return;
    await this.redlock.connect();
  }

  onApplicationShutdown(): Promise<void> {
    return this.redlock.close();
  }
}
