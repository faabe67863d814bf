import { Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Redlock } from '../core/index.js';

/**
 * The one owner of the engine's lifecycle: waits for the node connections at module init (bounded
 * by `connectTimeout`, so the first acquire works) and, at application shutdown, stops watchdogs,
 * releases the locks still held and closes the connections the module opened. `LockService` is a
 * facade over the engine and has no lifecycle of its own, so the engine is closed also when a test
 * replaces `LockService` with a double, and its connections never keep the process alive.
 */
@Injectable()
export class RedlockLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(private readonly redlock: Redlock) {}

  async onModuleInit(): Promise<void> {
    await this.redlock.connect();
  }

  onApplicationShutdown(): Promise<void> {
    return this.redlock.close();
  }
}
