/**
 * A small NestJS app with one `@Cron('* * * * * *')` job under `@DistributedLock`, run as a separate
 * Node process by cron.spec.ts (two of them per scenario, one with its wall clock shifted by
 * libfaketime). It imports the BUILT library, as a user's app would: the spec transpiles this file
 * with TypeScript (decorators emitted exactly as tsc emits them) and points the `nest-quorum-lock`
 * import at dist/.
 *
 * Every run of the job appends one JSON record to the Redis list `runs:<SCENARIO>` on the store
 * node (a redis-server that is not a lock node): which instance ran, the tick it ran for (its own
 * clock, rounded to the second), its fencing token, and its clock's offset from the store's clock
 * (Redis TIME is not shifted by libfaketime, so the spec can check that the shift took effect).
 *
 * Environment: LOCK_NODES (comma-separated URLs), STORE_URL, SCENARIO (a key of {@link jobs}),
 * INSTANCE (a name for the records). Prints `ready` on stdout once the app is initialised.
 */
import 'reflect-metadata';
import { Injectable, Module, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Redis } from 'ioredis';
import { DistributedLock, FencingToken, RedlockModule } from 'nest-quorum-lock';

/** One run of the job, as the spec reads it back. */
export interface RunRecord {
  instance: string;
  /** The second the cron tick was for, by this instance's clock. */
  tick: number;
  fencingToken: number | undefined;
  /** This instance's Date.now() minus the store's TIME, in ms (~0, or the faketime shift). */
  offsetMs: number;
}

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const SCENARIO = env('SCENARIO');
const INSTANCE = env('INSTANCE');
const store = new Redis(env('STORE_URL'), { lazyConnect: true });

/**
 * The job's work: about 5 ms, like the short report jobs of issue 12 that ran twice per tick when
 * the instances' clocks were 30 ms apart (the lock was free again long before the late one fired).
 */
async function work(fencingToken: number | undefined): Promise<void> {
  const started = Date.now();
  const [seconds, micros] = await store.time();
  const storeMs = Number(seconds) * 1000 + Number(micros) / 1000;
  const record: RunRecord = {
    instance: INSTANCE,
    // Rounded, not floored: a timer may fire a millisecond before the second it was set for.
    tick: Math.round(started / 1000),
    fencingToken,
    offsetMs: started - storeMs,
  };
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 5 - Date.now())));
  await store.rpush(`runs:${SCENARIO}`, JSON.stringify(record));
}

/**
 * 500 ms: longer than any clock offset between instances plus the cron timer's lateness (tens of
 * ms), so the lock taken by the earliest instance is still held when the others fire for the same
 * tick; shorter than the tick period minus that offset, so it has expired before the earliest
 * instance fires for the next tick. Half the period leaves ~450 ms of margin on both sides.
 */
const HOLD_AT_LEAST = 500;

/** The pattern under test, `@Cron` above `@DistributedLock` (applied last, so it sees the wrapper). */
@Injectable()
class CronAboveLock {
  @Cron('* * * * * *')
  @DistributedLock('report', { onBusy: 'skip', holdAtLeast: HOLD_AT_LEAST })
  async report(@FencingToken() token?: number): Promise<void> {
    await work(token);
  }
}

/** The pattern under test, `@Cron` below `@DistributedLock` (the wrapper keeps the cron metadata). */
@Injectable()
class CronBelowLock {
  @DistributedLock('report', { onBusy: 'skip', holdAtLeast: HOLD_AT_LEAST })
  @Cron('* * * * * *')
  async report(@FencingToken() token?: number): Promise<void> {
    await work(token);
  }
}

/** Control: no holdAtLeast. The lock is released after ~5 ms, long before the late instance fires. */
@Injectable()
class SkipWithoutHold {
  @Cron('* * * * * *')
  @DistributedLock('report', { onBusy: 'skip' })
  async report(@FencingToken() token?: number): Promise<void> {
    await work(token);
  }
}

/** Control: holdAtLeast with the default onBusy ('throw'): the scheduler logs the losers' errors. */
@Injectable()
class ThrowWithHold {
  @Cron('* * * * * *')
  @DistributedLock('report', { holdAtLeast: HOLD_AT_LEAST })
  async report(@FencingToken() token?: number): Promise<void> {
    await work(token);
  }
}

const jobs: Record<string, Type> = {
  'cron-above': CronAboveLock,
  'cron-below': CronBelowLock,
  'control-no-hold': SkipWithoutHold,
  'control-throw': ThrowWithHold,
};

async function main(): Promise<void> {
  const job = jobs[SCENARIO];
  if (!job) throw new Error(`unknown SCENARIO ${SCENARIO}; one of ${Object.keys(jobs).join(', ')}`);
  await store.connect();
  @Module({
    imports: [
      ScheduleModule.forRoot(),
      RedlockModule.forRoot({
        nodes: env('LOCK_NODES').split(','),
        // Scenarios share the lock nodes; each its own lock.
        keyPrefix: `cron:${SCENARIO}:`,
        // Nodes the spec has just started cannot have granted anything yet.
        restartGuard: false,
      }),
    ],
    providers: [job],
  })
  class CronAppModule {}

  // Debug level on: the skipped ticks are logged there, and the spec checks they are not errors.
  const app = await NestFactory.createApplicationContext(CronAppModule, {
    logger: ['fatal', 'error', 'warn', 'log', 'debug'],
  });
  app.enableShutdownHooks();
  // Close the store only after Nest has stopped the cron jobs and released the lock.
  process.once('exit', () => store.disconnect());
  process.stdout.write('ready\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
