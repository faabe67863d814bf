/**
 * The part of redlock@5.0.0-beta.2's API the benchmarks use. Its package.json has an `exports`
 * map without a `types` condition, so TypeScript (module NodeNext) cannot reach the typings it
 * ships; this declaration stands in for them.
 */
declare module 'redlock' {
  import { EventEmitter } from 'node:events';
  import type { Redis } from 'ioredis';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  export class Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock extends EventEmitter {
    readonly settings: Settings;
    constructor(clients: Iterable<Redis>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<unknown>;
    quit(): Promise<void>;
  }
}
