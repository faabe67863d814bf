/**
 * One worker process of bullmq-fencing.spec.ts: a NestJS application context with @nestjs/bullmq,
 * RedlockModule and docs/examples/bullmq.ts's PayoutProcessor, run from a transpiled copy (the
 * spec writes it to test/.generated/bullmq/). PAYOUT_WORKER holds its configuration as JSON.
 * The bank of worker A stops its own process (SIGSTOP) when its transfer is done, before the
 * processor writes: the pause the spec resumes after the job has passed to worker B.
 * Reports to the spec over IPC: ready, transfer, aborted (with the signal's reason), warn, error.
 */
import 'reflect-metadata';
import { BullModule } from '@nestjs/bullmq';
import { Module, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { RedlockModule } from 'nest-quorum-lock';
import { BANK, PAYOUTS_DB, PayoutProcessor, type Bank, type Payout } from '../../../docs/examples/bullmq.js';

interface WorkerConfig {
  role: 'A' | 'B';
  lockNodes: string[];
  queue: { host: string; port: number };
  database: string;
}
const config = JSON.parse(process.env.PAYOUT_WORKER ?? '{}') as WorkerConfig;
const send = (message: Record<string, unknown>) => process.send?.({ role: config.role, ...message });

class PausingBank implements Bank {
  async transfer(payout: Payout, signal: AbortSignal): Promise<string> {
    signal.addEventListener('abort', () =>
      send({ type: 'aborted', reason: (signal.reason as Error | undefined)?.name }),
    );
    send({ type: 'transfer', account: payout.account });
    if (config.role === 'A') process.kill(process.pid, 'SIGSTOP'); // paused past both leases
    return `ref-${config.role}`;
  }
}

const logger: LoggerService = {
  log: () => undefined,
  debug: () => undefined,
  verbose: () => undefined,
  warn: (message: unknown) => send({ type: 'warn', message: String(message) }),
  error: (message: unknown) => send({ type: 'error', message: String(message) }),
};

@Module({
  imports: [
    BullModule.forRoot({ connection: config.queue }),
    BullModule.registerQueue({ name: 'payouts' }),
    RedlockModule.forRoot({ nodes: config.lockNodes, restartGuard: false }),
  ],
  providers: [
    PayoutProcessor,
    { provide: PAYOUTS_DB, useFactory: () => new pg.Pool({ connectionString: config.database, max: 2 }) },
    { provide: BANK, useClass: PausingBank },
  ],
})
class WorkerModule {}

const app = await NestFactory.createApplicationContext(WorkerModule, { logger });
// A run whose BullMQ lock is gone cannot move its job on: BullMQ says so on the worker's 'error'.
app.get(PayoutProcessor).worker.on('error', (err) => send({ type: 'worker-error', message: err.message }));
process.on('message', (message: { type?: string }) => {
  if (message?.type === 'exit')
    void app
      .close()
      .catch(() => undefined)
      .finally(() => process.exit(0));
});
send({ type: 'ready' });
