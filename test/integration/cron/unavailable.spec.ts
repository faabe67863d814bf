/**
 * Issue 29, item 8: `@Cron` + `@DistributedLock(key, { onBusy: 'skip' })` while the lock quorum is
 * unavailable (2 of 3 real redis-server nodes killed) logs ONE line when the episode starts, with
 * the reason (every node and why it failed), and ONE when a tick reaches the quorum again, instead
 * of an ERROR with a stack trace every tick. A control job with the default `onBusy: 'throw'` in
 * the same app shows what the scheduler logs without it.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { DistributedLock, RedlockModule } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { sleep } from '../../support/cluster.js';

/** Every line the app logs, with its level, context and when. */
class CapturingLogger implements LoggerService {
  readonly lines: Array<{ level: string; context: string; text: string; at: number }> = [];
  private add(level: string, message: unknown, rest: unknown[]): void {
    const context = typeof rest.at(-1) === 'string' ? (rest.at(-1) as string) : '';
    const stack = rest.length > 1 && typeof rest[0] === 'string' ? `\n${rest[0]}` : '';
    this.lines.push({ level, context, text: `${String(message)}${stack}`, at: Date.now() });
  }
  log(message: unknown, ...rest: unknown[]): void {
    this.add('log', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.add('warn', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.add('error', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.add('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.add('verbose', message, rest);
  }
}

@Injectable()
class Jobs {
  runs = 0;

  @Cron('* * * * * *')
  @DistributedLock('report', { onBusy: 'skip' })
  async report(): Promise<void> {
    this.runs++;
  }

  /** Control: the default onBusy ('throw'): the scheduler logs each tick's error. */
  @Cron('* * * * * *')
  @DistributedLock('report-throw')
  async reportThrowing(): Promise<void> {}
}

describe("@Cron with onBusy: 'skip' while the quorum is unavailable (3 real redis-server nodes)", () => {
  const TICKS = 6;
  let redis: RedisNodes;
  let app: INestApplicationContext;
  const logger = new CapturingLogger();

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
    @Module({
      imports: [
        ScheduleModule.forRoot(),
        RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false, nodeTimeout: 100 }),
      ],
      providers: [Jobs],
    })
    class CronModule {}
    app = await NestFactory.createApplicationContext(CronModule, { logger });
  });
  afterAll(async () => {
    await app?.close();
    await redis?.close();
  });

  test(`${TICKS} ticks without a quorum: one warning with the reason, one line when it is back, no error from the job`, async () => {
    const jobs = app.get(Jobs);
    for (let i = 0; i < 30 && jobs.runs < 1; i++) await sleep(100);
    expect(jobs.runs).toBeGreaterThanOrEqual(1);

    const downAt = Date.now();
    await redis.kill(1);
    await redis.kill(2);
    const runsBefore = jobs.runs;
    await sleep(TICKS * 1000 + 200);
    expect(jobs.runs).toBe(runsBefore);
    await redis.revive(1);
    await redis.revive(2);
    for (let i = 0; i < 40 && jobs.runs === runsBefore; i++) await sleep(100);
    expect(jobs.runs).toBeGreaterThan(runsBefore);
    await sleep(100);

    const during = logger.lines.filter((l) => l.at >= downAt);
    const about = (name: string) => during.filter((l) => l.text.includes(name));
    const report = about('Jobs.report ').concat(about('Jobs.report:'));
    const control = during.filter((l) => l.level === 'error' && l.text.includes('report-throw'));
    // Figures for the report (what a user's log shows for this episode).
    console.log(
      `episode of ${TICKS} s: ${report.length} line(s) about the skip job ` +
        `(${report.map((l) => l.level).join(', ')}); control (onBusy 'throw'): ${control.length} error line(s); ` +
        `all lines in the episode: ${during.length} (${[...new Set(during.map((l) => l.context))].join(', ')})`,
    );

    const started = report.filter((l) => l.level === 'warn');
    expect(started).toHaveLength(1);
    expect(started[0]!.text).toContain('lock quorum is unavailable');
    // The reason: the nodes that failed and why.
    expect(started[0]!.text).toContain(redis.url(1).replace('redis://', ''));
    const ended = report.filter((l) => l.text.includes('available again'));
    expect(ended).toHaveLength(1);
    expect(ended[0]!.level).toBe('log');
    expect(ended[0]!.text).toMatch(/; [4-9] run\(s\) were skipped/);
    expect(report).toHaveLength(2);
    // Nothing from the skip job at error level, no stack trace.
    expect(during.filter((l) => l.level === 'error' && !l.text.includes('report-throw'))).toEqual([]);
    // The control floods: an error per tick.
    expect(control.length).toBeGreaterThanOrEqual(TICKS - 1);
  });
});
