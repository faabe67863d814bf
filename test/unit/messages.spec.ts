import 'reflect-metadata';
import {
  Controller,
  Injectable,
  Param,
  Post,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  DistributedLock,
  LockNotAcquiredError,
  LockService,
  QuorumUnavailableError,
  RedlockOptionsError,
} from '../../lib/index.js';
import { resolveOptions } from '../../lib/core/resolve-options.js';
import { lockErrorPayload } from '../../lib/nest/contexts/payload.js';
import { retryAfterMs } from '../../lib/nest/contexts/retry-after.js';
import { RedlockTestingModule } from '../../lib/testing/index.js';

/**
 * Issue 40, item 7: what users read in messages, bodies and logs (the parts that need no Redis;
 * test/integration/engine/messages.spec.ts has those that do).
 */

@Injectable()
class OrdersService {
  @DistributedLock('order:{0}')
  async pay(id: string): Promise<string> {
    return `paid ${id}`;
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post(':id/pay')
  pay(@Param('id') id: string): Promise<string> {
    return this.orders.pay(id);
  }
}

describe('messages and logs', () => {
  test('a float retry hint is whole ms in the payload, the message and the error text', () => {
    const quorum = new QuorumUnavailableError(['r'], 2, 3, [], 56916.995945);
    const payload = lockErrorPayload(quorum, { retryAfterMs: retryAfterMs(quorum) });
    expect(payload.retryAfterMs).toBe(56917);
    expect(JSON.stringify(payload)).not.toMatch(/\d\.\d/);
    const busy = new LockNotAcquiredError(['r'], 1234.25, 1);
    expect(busy.message).toContain('about 1235 ms');
    expect(Number.isInteger(retryAfterMs(busy, 1.5))).toBe(true);
  });

  test.each([
    ['node-redis', 'node-redis options { socket: { host, port }, password }'],
    ['ioredis', 'ioredis options { host, port, password }'],
  ] as const)(
    'a raw "@" in a password: the advice is for the client that opens it (%s)',
    (client, advice) => {
      let thrown: unknown;
      try {
        resolveOptions({ nodes: ['redis://:p@ss@127.0.0.1:6379'], client });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(RedlockOptionsError);
      const message = (thrown as Error).message;
      expect(message).toContain(advice);
      const other = client === 'ioredis' ? 'node-redis' : 'ioredis';
      expect(message).not.toContain(`${other} options`);
    },
  );

  test('the DI error for a missing lock module names RedlockTestingModule', async () => {
    const compiling = Test.createTestingModule({ providers: [OrdersService] }).compile();
    await expect(compiling).rejects.toThrow(
      /RedlockTestingModule\.forRoot\(\) from nest-quorum-lock\/testing/,
    );
  });

  describe('the log line of a busy lock names the locked method, and the route that reached it', () => {
    let app: INestApplication;
    const lines: string[] = [];
    const keep = (message: unknown) => void lines.push(String(message));
    const logger: LoggerService = { log: keep, warn: keep, error: keep, debug: keep, verbose: keep };

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockTestingModule.forRoot()],
        controllers: [OrdersController],
        providers: [OrdersService],
      }).compile();
      app = moduleRef.createNestApplication({ logger });
      await app.init();
    });
    afterAll(() => app?.close());

    test('OrdersService.pay (via OrdersController.pay)', async () => {
      const held = await app.get(LockService).acquire('order:1');
      try {
        const res = await request(app.getHttpServer()).post('/orders/1/pay');
        expect(res.status).toBe(409);
        expect(Number.isInteger(res.body.retryAfterMs)).toBe(true);
      } finally {
        await held.release();
      }
      const line = lines.find((l) => l.includes('LOCK_NOT_ACQUIRED'));
      expect(line).toMatch(/^OrdersService\.pay \(via OrdersController\.pay\): LOCK_NOT_ACQUIRED/);
    });
  });
});
