/**
 * Issue 25, item 6: one fencing-token validation for the Redis and the PostgreSQL fenced stores,
 * and the PostgreSQL helper's errors are RedlockErrors like every other error of the library.
 */
import { Redis } from 'ioredis';
import { FencedWriter, RedlockError } from '../../lib/index.js';
import { FencedTable, FencedTableError, InvalidFencingTokenError } from '../../lib/fencing/postgres/index.js';

const BAD = [0, -1, 1.5, Number.NaN, Infinity, 2 ** 53, '5', null, undefined, 5n] as unknown as number[];

/**
 * Stores that record what they were asked: a refused token must not reach them. The Redis one is a
 * real ioredis client that never connected (lazyConnect): its first command would connect it, and
 * every command it is sent is recorded.
 */
function recorders() {
  const sent: unknown[] = [];
  const redis = new Redis({ lazyConnect: true, port: 1 });
  redis.on('error', () => undefined);
  const call = redis.call.bind(redis);
  redis.call = ((...a: Parameters<typeof call>) => (sent.push(a), call(...a))) as typeof redis.call;
  const pg = { query: async (text: string) => (sent.push(text), { rows: [], rowCount: 0 }) };
  return {
    sent,
    redis,
    writer: new FencedWriter(redis),
    table: new FencedTable({ table: 't' }),
    pg,
  };
}

describe('one fencing-token check for FencedWriter (Redis) and FencedTable (PostgreSQL)', () => {
  test.each(BAD.map((token) => [String(token), token]))(
    'token %s: both refuse it with the same message, before any I/O',
    async (_, token) => {
      const { sent, redis, writer, table, pg } = recorders();
      const redisErrors = await Promise.all([
        writer.hset('k', { a: 1 }, token).catch((e: unknown) => e),
        writer.hgetall('k', token).catch((e: unknown) => e),
      ]);
      const pgErrors = await Promise.all([
        table.write(pg, 'k', token, { a: 1 }).catch((e: unknown) => e),
        table.read(pg, 'k', token).catch((e: unknown) => e),
      ]);
      for (const err of redisErrors) expect(err).toBeInstanceOf(TypeError);
      for (const err of pgErrors) expect(err).toBeInstanceOf(InvalidFencingTokenError);
      const messages = new Set([...redisErrors, ...pgErrors].map((e) => (e as Error).message));
      expect([...messages]).toEqual([
        `A fencing token must be a positive safe integer (lock.fencingToken), got ${String(token)}.`,
      ]);
      expect(sent).toEqual([]);
      expect(redis.status).toBe('wait'); // never connected: nothing was sent
      redis.disconnect();
    },
  );

  test('FencedTableError and its subclasses are RedlockErrors, named after their class', () => {
    const err = new InvalidFencingTokenError(0);
    expect(err).toBeInstanceOf(FencedTableError);
    expect(err).toBeInstanceOf(RedlockError);
    expect(err.name).toBe('InvalidFencingTokenError');
    expect(new FencedTableError('x').name).toBe('FencedTableError');
  });
});
