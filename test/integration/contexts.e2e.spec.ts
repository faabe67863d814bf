import 'reflect-metadata';
import type { AddressInfo, Server } from 'node:net';
import {
  Controller,
  type INestApplication,
  type INestMicroservice,
  type LoggerService,
} from '@nestjs/common';
import {
  ClientProxyFactory,
  EventPattern,
  MessagePattern,
  Payload,
  RpcException,
  Transport,
  type ClientProxy,
} from '@nestjs/microservices';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { io, type Socket } from 'socket.io-client';
import { DistributedLock, FencingToken, LockService, Redlock, RedlockModule } from '../../lib/index.js';
import { RedisNodes } from '../../lib/testing/index.js';
import { sleep } from '../support/cluster.js';

/** Every lock-error payload has exactly these keys (retryAfterMs only when known). */
const BUSY_KEYS = ['code', 'message', 'retryAfterMs'];
const HOLD_MS = 5000;

/** Keeps Nest's log lines (errors as the values logged), so tests can assert what an operator sees. */
class CapturingLogger implements LoggerService {
  readonly errors: unknown[] = [];
  log(): void {}
  warn(): void {}
  error(message: unknown): void {
    this.errors.push(message);
  }
}

/** Records what ran, so a test can tell that a refused call never reached the method body. */
class Calls {
  static readonly events: unknown[] = [];
}

@Controller()
class RpcHandlers {
  @MessagePattern('rpc.locked')
  @DistributedLock('rpc-locked', { wait: 0 })
  async locked(@FencingToken() token: number): Promise<{ token: number }> {
    return { token };
  }

  @MessagePattern('rpc.busy')
  @DistributedLock('rpc-busy', { wait: 0 })
  async busy(): Promise<string> {
    return 'ran';
  }

  @MessagePattern('rpc.own-rpc-exception')
  @DistributedLock('rpc-own', { wait: 0 })
  async ownRpcException(): Promise<never> {
    throw new RpcException({ custom: 'kept', code: 'APP_CODE' });
  }

  @MessagePattern('rpc.plain-error')
  @DistributedLock('rpc-plain', { wait: 0 })
  async plainError(): Promise<never> {
    throw new Error('database exploded');
  }

  @EventPattern('rpc.event')
  @DistributedLock('rpc-event', { wait: 0 })
  async event(@Payload() data: { n: number }): Promise<void> {
    Calls.events.push(data.n);
  }
}

@WebSocketGateway()
class LockedGateway {
  @SubscribeMessage('locked')
  @DistributedLock('ws-locked', { wait: 0 })
  async locked(@MessageBody() data: { n: number }, @FencingToken() token: number) {
    return { n: data.n, token };
  }

  @SubscribeMessage('own-ws-exception')
  @DistributedLock('ws-own', { wait: 0 })
  async ownWsException(): Promise<never> {
    throw new WsException('not allowed');
  }

  @SubscribeMessage('plain-error')
  @DistributedLock('ws-plain', { wait: 0 })
  async plainError(): Promise<never> {
    throw new Error('database exploded');
  }
}

/** The first `exception` event the socket receives after this call, or a timeout error. */
function nextException(socket: Socket, timeoutMs = 3000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no exception event')), timeoutMs);
    socket.once('exception', (payload: unknown) => {
      clearTimeout(timer);
      resolve(payload);
    });
  });
}

/** Sends a request and returns what the client's observable errored with (fails if it succeeded). */
async function rpcError(client: ClientProxy, pattern: string): Promise<Record<string, unknown>> {
  try {
    const value = await firstValueFrom(client.send(pattern, {}));
    throw new Error(`expected an error, got ${JSON.stringify(value)}`);
  } catch (err) {
    return err as Record<string, unknown>;
  }
}

describe('lock errors per execution context, real transports (3 real redis-server nodes)', () => {
  let redis: RedisNodes;

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
  });
  afterAll(async () => {
    await redis?.close();
  });

  describe('RPC: TCP microservice + ClientProxy', () => {
    let server: INestMicroservice;
    let client: ClientProxy;
    let locks: LockService;
    const logger = new CapturingLogger();

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false, nodeTimeout: 100 })],
        controllers: [RpcHandlers],
      }).compile();
      // Port 0: the OS picks the port as it binds it (a port picked before could be taken meanwhile).
      server = moduleRef.createNestMicroservice({
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port: 0 },
      });
      // Nest's exception handlers log through the static Logger, which useLogger() redirects (for
      // the WebSocket app below too): the tests read what an operator would see, and it stays quiet.
      server.useLogger(logger);
      await server.listen();
      const { port } = server.unwrap<Server>().address() as AddressInfo;
      locks = server.get(LockService);
      client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
      await client.connect();
    });
    afterAll(async () => {
      await client?.close();
      await server?.close();
    });

    test('a free lock: the handler runs and the client gets its result', async () => {
      const result = await firstValueFrom(client.send<{ token: number }>('rpc.locked', {}));
      expect(Object.keys(result)).toEqual(['token']);
      expect(result.token).toBeGreaterThan(0);
    });

    test('a busy lock: the client receives exactly { code: LOCK_NOT_ACQUIRED, message, retryAfterMs }', async () => {
      const holder = await locks.acquire('rpc-busy', { ttl: HOLD_MS });
      try {
        const err = await rpcError(client, 'rpc.busy');
        expect(Object.keys(err).sort()).toEqual(BUSY_KEYS);
        expect(err.code).toBe('LOCK_NOT_ACQUIRED');
        expect(typeof err.message).toBe('string');
        // Client-facing: no lock key; the hint is the retry delay, not the holder's 5 s lease.
        expect(err.message).toBe('The resource is busy; retry in 1 s.');
        expect(typeof err.retryAfterMs).toBe('number');
        expect(err.retryAfterMs).toBeGreaterThanOrEqual(200);
        expect(err.retryAfterMs).toBeLessThan(HOLD_MS - 2000);
      } finally {
        await holder.release();
      }
      await expect(firstValueFrom(client.send('rpc.busy', {}))).resolves.toBe('ran');
    });

    test("the method's own RpcException and a plain Error pass through as Nest maps them", async () => {
      expect(await rpcError(client, 'rpc.own-rpc-exception')).toEqual({ custom: 'kept', code: 'APP_CODE' });
      // Nest's default for an unknown error, untouched by the interceptor.
      expect(await rpcError(client, 'rpc.plain-error')).toEqual({
        status: 'error',
        message: 'Internal server error',
      });
    });

    test('@EventPattern on a busy lock: the event is dropped, Nest logs the RpcException (no reply channel); the next one runs', async () => {
      Calls.events.length = 0;
      logger.errors.length = 0;
      const holder = await locks.acquire('rpc-event', { ttl: HOLD_MS });
      try {
        await firstValueFrom(client.emit('rpc.event', { n: 1 }));
        for (let i = 0; i < 50 && logger.errors.length === 0; i++) await sleep(20);
        expect(Calls.events).toEqual([]);
        expect(logger.errors).toHaveLength(1);
        const logged = logger.errors[0];
        expect(logged).toBeInstanceOf(RpcException);
        expect(Object.keys((logged as RpcException).getError() as object).sort()).toEqual(BUSY_KEYS);
        expect((logged as RpcException).getError()).toMatchObject({ code: 'LOCK_NOT_ACQUIRED' });
      } finally {
        await holder.release();
      }
      await firstValueFrom(client.emit('rpc.event', { n: 2 }));
      for (let i = 0; i < 50 && Calls.events.length === 0; i++) await sleep(20);
      expect(Calls.events).toEqual([2]);
    });

    test('a lost quorum: the client receives exactly { code: QUORUM_UNAVAILABLE, message }', async () => {
      for (const i of [0, 1]) redis.stop(i);
      try {
        const err = await rpcError(client, 'rpc.locked');
        // retryAfterMs is only sent when the engine knows when a quorum votes again (abstention),
        // not for nodes that are down.
        expect(Object.keys(err).sort()).toEqual(['code', 'message']);
        expect(err.code).toBe('QUORUM_UNAVAILABLE');
        expect(err.message).toBe('Distributed lock quorum unavailable; retry shortly.');
      } finally {
        for (const i of [0, 1]) redis.resume(i);
      }
    });

    // Last in this block: it shuts the app's lock engine down.
    test('an engine shutting down: the client receives exactly { code: ENGINE_CLOSED, message, retryAfterMs }', async () => {
      await server.get(Redlock).close();
      const err = await rpcError(client, 'rpc.locked');
      expect(err).toEqual({
        code: 'ENGINE_CLOSED',
        message: 'This instance is shutting down; retry in 1 s.',
        retryAfterMs: 1000,
      });
    });
  });

  describe('WebSocket: socket.io gateway + socket.io-client', () => {
    let app: INestApplication;
    let socket: Socket;
    let locks: LockService;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [RedlockModule.forRoot({ nodes: redis.urls, restartGuard: false, nodeTimeout: 100 })],
        providers: [LockedGateway],
      }).compile();
      app = moduleRef.createNestApplication({ logger: false });
      app.useWebSocketAdapter(new IoAdapter(app));
      await app.listen(0, '127.0.0.1');
      const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
      locks = app.get(LockService);
      socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], reconnection: false });
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('connect_error', reject);
      });
    });
    afterAll(async () => {
      socket?.disconnect();
      await app?.close();
    });

    test('a free lock: the ack receives the handler result', async () => {
      const result = (await socket.timeout(3000).emitWithAck('locked', { n: 7 })) as Record<string, unknown>;
      expect(result.n).toBe(7);
      expect(result.token).toEqual(expect.any(Number));
    });

    test('a busy lock: an `exception` event with exactly { code: LOCK_NOT_ACQUIRED, message, retryAfterMs }', async () => {
      const holder = await locks.acquire('ws-locked', { ttl: HOLD_MS });
      try {
        const exception = nextException(socket);
        socket.emit('locked', { n: 1 });
        const payload = (await exception) as Record<string, unknown>;
        // BaseWsExceptionFilter emits an object error as it is: no `status`, no `cause`.
        expect(Object.keys(payload).sort()).toEqual(BUSY_KEYS);
        expect(payload.code).toBe('LOCK_NOT_ACQUIRED');
        expect(payload.message).toBe('The resource is busy; retry in 1 s.');
        expect(payload.retryAfterMs).toBeGreaterThanOrEqual(200);
        expect(payload.retryAfterMs).toBeLessThan(HOLD_MS - 2000);
      } finally {
        await holder.release();
      }
    });

    test('a busy lock with an ack: the `exception` event arrives, the ack is never called', async () => {
      const holder = await locks.acquire('ws-locked', { ttl: HOLD_MS });
      let acked = false;
      try {
        const exception = nextException(socket);
        socket.emit('locked', { n: 2 }, () => {
          acked = true;
        });
        expect(await exception).toMatchObject({ code: 'LOCK_NOT_ACQUIRED' });
        await sleep(500); // give a (wrong) ack time to arrive
        expect(acked).toBe(false);
      } finally {
        await holder.release();
      }
    });

    test('a lost quorum: an `exception` event with exactly { code: QUORUM_UNAVAILABLE, message }', async () => {
      for (const i of [0, 1]) redis.stop(i);
      try {
        const exception = nextException(socket);
        socket.emit('locked', { n: 3 });
        expect(await exception).toEqual({
          code: 'QUORUM_UNAVAILABLE',
          message: 'Distributed lock quorum unavailable; retry shortly.',
        });
      } finally {
        for (const i of [0, 1]) redis.resume(i);
      }
    });

    test("the method's own WsException and a plain Error pass through as Nest maps them", async () => {
      let exception = nextException(socket);
      socket.emit('own-ws-exception', { a: 1 });
      expect(await exception).toEqual({
        status: 'error',
        message: 'not allowed',
        cause: { pattern: 'own-ws-exception', data: { a: 1 } },
      });
      exception = nextException(socket);
      socket.emit('plain-error', { a: 2 });
      expect(await exception).toEqual({
        status: 'error',
        message: 'Internal server error',
        cause: { pattern: 'plain-error', data: { a: 2 } },
      });
    });

    // Last in this block: it shuts the app's lock engine down.
    test('an engine shutting down: an `exception` event with exactly { code: ENGINE_CLOSED, message, retryAfterMs }', async () => {
      await app.get(Redlock).close();
      const exception = nextException(socket);
      socket.emit('locked', { n: 4 });
      expect(await exception).toEqual({
        code: 'ENGINE_CLOSED',
        message: 'This instance is shutting down; retry in 1 s.',
        retryAfterMs: 1000,
      });
    });
  });
});
