import 'reflect-metadata';
import type { CallHandler, ExecutionContext, INestApplication } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import {
  AbstractGraphQLDriver,
  Args,
  Float,
  GraphQLModule,
  GraphQLSchemaHost,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { Test } from '@nestjs/testing';
import { graphql, GraphQLError } from 'graphql';
import { firstValueFrom, throwError } from 'rxjs';
import request from 'supertest';
import {
  DistributedLock,
  EngineClosedError,
  FencingToken,
  LockErrorInterceptor,
  LockNotAcquiredError,
  LockService,
  QuorumUnavailableError,
  RedlockModule,
} from '../../lib/index.js';
import { RedisNodes } from '../../lib/testing/index.js';

const HOLD_MS = 5000;

@Resolver()
class LockedResolver {
  // Float, not Int: fencing tokens are seeded from microseconds and exceed GraphQL's 32-bit Int.
  @Query(() => Float)
  @DistributedLock('gql-locked', { wait: 0 })
  async locked(@FencingToken() token: number): Promise<number> {
    return token;
  }

  @Query(() => String)
  @DistributedLock('gql-own', { wait: 0 })
  async own(@Args('why') why: string): Promise<string> {
    throw new GraphQLError(why, { extensions: { code: 'APP_CODE' } });
  }
}

/**
 * A driver that only builds the schema: queries run through graphql-js `graphql()` against Nest's
 * resolvers (so the `graphql` execution context, the interceptor and the executor are all real),
 * without an HTTP server.
 */
class ExecuteOnlyDriver extends AbstractGraphQLDriver {
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}

// The Apollo driver serves Express through @as-integrations/express5, which is not a
// devDependency yet: that part runs only where it resolves. A variable specifier keeps tsc from
// requiring its types.
const express5 = '@as-integrations/express5';
const apolloAvailable = await import(express5).then(
  () => true,
  () => false,
);

/** Runs the interceptor over a handler that fails with `err`, in an execution context of `type`. */
async function mapped(err: unknown, type: string): Promise<unknown> {
  const context = { getType: () => type } as unknown as ExecutionContext;
  const next: CallHandler = { handle: () => throwError(() => err) };
  return firstValueFrom(new LockErrorInterceptor().intercept(context, next)).then(
    () => {
      throw new Error('expected an error');
    },
    (e: unknown) => e,
  );
}

describe('GraphQL context: the mapping itself', () => {
  test('LockNotAcquiredError becomes a GraphQLError with extensions { code, retryAfterMs }', async () => {
    const cause = new LockNotAcquiredError(['r'], 1234, 1);
    const err = (await mapped(cause, 'graphql')) as GraphQLError;
    expect(err).toBeInstanceOf(GraphQLError);
    // Client-facing message; the hint is the retry delay (200 ms), below the holder's lease.
    expect(err.message).toBe('The resource is busy; retry in 1 s.');
    expect(err.extensions).toEqual({ code: 'LOCK_NOT_ACQUIRED', retryAfterMs: 200 });
    const soon = (await mapped(new LockNotAcquiredError(['r'], 120, 1), 'graphql')) as GraphQLError;
    expect(soon.extensions).toEqual({ code: 'LOCK_NOT_ACQUIRED', retryAfterMs: 120 });
    expect(err.originalError).toBe(cause);
  });

  test('QuorumUnavailableError: code QUORUM_UNAVAILABLE, retryAfterMs only when the error has it', async () => {
    const down = (await mapped(new QuorumUnavailableError(['r'], 2, 3, []), 'graphql')) as GraphQLError;
    expect(down).toBeInstanceOf(GraphQLError);
    expect(down.extensions).toEqual({ code: 'QUORUM_UNAVAILABLE' });
    const abstaining = (await mapped(
      new QuorumUnavailableError(['r'], 2, 3, [], 2500),
      'graphql',
    )) as GraphQLError;
    expect(abstaining.extensions).toEqual({ code: 'QUORUM_UNAVAILABLE', retryAfterMs: 2500 });
    expect(abstaining.message).toBe('Distributed lock quorum unavailable; retry in 3 s.');
  });

  test('EngineClosedError (shutdown): code ENGINE_CLOSED, retry in a second', async () => {
    const closed = (await mapped(new EngineClosedError(), 'graphql')) as GraphQLError;
    expect(closed).toBeInstanceOf(GraphQLError);
    expect(closed.extensions).toEqual({ code: 'ENGINE_CLOSED', retryAfterMs: 1000 });
    expect(closed.message).toBe('This instance is shutting down; retry in 1 s.');
  });

  test('anything else, and any unknown context type, is passed through as the same object', async () => {
    const own = new Error('mine');
    expect(await mapped(own, 'graphql')).toBe(own);
    const lock = new LockNotAcquiredError(['r'], 10, 1);
    expect(await mapped(lock, 'kafka-custom')).toBe(lock);
  });
});

/** A GraphQL response as JSON, whichever way the query was sent. */
interface GqlResponse {
  data: Record<string, unknown> | null;
  errors?: Array<{ message: string; path?: string[]; extensions: Record<string, unknown> }>;
}

interface Transport {
  name: string;
  enabled: boolean;
  start(redisUrls: string[]): Promise<{ app: INestApplication; query: (q: string) => Promise<GqlResponse> }>;
}

const transports: Transport[] = [
  {
    name: 'graphql-js execute over the schema @nestjs/graphql built',
    enabled: true,
    async start(nodes) {
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ nodes, restartGuard: false, nodeTimeout: 100 }),
          GraphQLModule.forRoot({ driver: ExecuteOnlyDriver, autoSchemaFile: true }),
        ],
        providers: [LockedResolver],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      const { schema } = app.get(GraphQLSchemaHost);
      const query = async (source: string) =>
        JSON.parse(JSON.stringify(await graphql({ schema, source, contextValue: {} }))) as GqlResponse;
      return { app, query };
    },
  },
  {
    name: 'Apollo driver (@apollo/server 5) over HTTP',
    enabled: apolloAvailable,
    async start(nodes) {
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedlockModule.forRoot({ nodes, restartGuard: false, nodeTimeout: 100 }),
          GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
        ],
        providers: [LockedResolver],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      const query = async (source: string) => {
        const res = await request(app.getHttpServer()).post('/graphql').send({ query: source });
        // Apollo answers 200 for resolver errors: they are data, not transport failures.
        expect(res.status).toBe(200);
        return res.body as GqlResponse;
      };
      return { app, query };
    },
  },
];

describe('GraphQL context with real resolvers (3 real redis-server nodes)', () => {
  let redis: RedisNodes;

  beforeAll(async () => {
    redis = await RedisNodes.start(3);
  });
  afterAll(async () => {
    await redis?.close();
  });

  for (const transport of transports) {
    (transport.enabled ? describe : describe.skip)(transport.name, () => {
      let app: INestApplication;
      let query: (q: string) => Promise<GqlResponse>;
      let locks: LockService;

      beforeAll(async () => {
        ({ app, query } = await transport.start(redis.urls));
        locks = app.get(LockService);
      });
      afterAll(async () => {
        await app?.close();
      });

      test('a free lock: data holds the fencing token', async () => {
        const res = await query('{ locked }');
        expect(res.errors).toBeUndefined();
        expect(res.data?.locked).toBeGreaterThan(0);
      });

      test('a busy lock: errors[0].extensions is { code: LOCK_NOT_ACQUIRED, retryAfterMs }', async () => {
        const holder = await locks.acquire('gql-locked', { ttl: HOLD_MS });
        try {
          const res = await query('{ locked }');
          expect(res.data).toBeNull();
          expect(res.errors).toHaveLength(1);
          const [error] = res.errors!;
          expect(error!.message).toBe('The resource is busy; retry in 1 s.');
          expect(error!.path).toEqual(['locked']);
          expect(Object.keys(error!.extensions).sort()).toEqual(['code', 'retryAfterMs']);
          expect(error!.extensions.code).toBe('LOCK_NOT_ACQUIRED');
          expect(error!.extensions.retryAfterMs).toBeGreaterThanOrEqual(200);
          expect(error!.extensions.retryAfterMs).toBeLessThan(HOLD_MS - 2000);
        } finally {
          await holder.release();
        }
      });

      test('a lost quorum: errors[0].extensions is { code: QUORUM_UNAVAILABLE }', async () => {
        for (const i of [0, 1]) redis.stop(i);
        try {
          const res = await query('{ locked }');
          expect(res.errors![0]!.message).toBe('Distributed lock quorum unavailable; retry shortly.');
          expect(res.errors![0]!.extensions).toEqual({ code: 'QUORUM_UNAVAILABLE' });
        } finally {
          for (const i of [0, 1]) redis.resume(i);
        }
      });

      test("the resolver's own GraphQLError passes through unchanged", async () => {
        const res = await query('{ own(why: "nope") }');
        expect(res.errors![0]!.message).toBe('nope');
        expect(res.errors![0]!.extensions).toEqual({ code: 'APP_CODE' });
      });
    });
  }
});
