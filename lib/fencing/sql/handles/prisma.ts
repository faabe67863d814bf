import type { SqlDialect } from '../identifiers.js';
import { placeholders } from '../statement.js';
import { sqlRunner, type SqlRow, type SqlRunner } from './runner.js';

/** What the runner uses of a Prisma client (and of the client an interactive transaction hands over). */
interface PrismaLike {
  $queryRawUnsafe(query: string, ...values: unknown[]): PromiseLike<unknown>;
  $executeRawUnsafe(query: string, ...values: unknown[]): PromiseLike<unknown>;
  /** The root client only: an interactive transaction's client has no `$connect`. */
  $connect?: unknown;
  $transaction?: <T>(fn: (tx: PrismaLike) => Promise<T>, options?: { isolationLevel?: string }) => Promise<T>;
  /** The datasource's provider as the generated client records it (`postgresql`, `mysql`, ...). */
  readonly _activeProvider?: unknown;
}

/** Whether `handle` is a Prisma client or an interactive transaction's client. */
export function isPrisma(handle: object): boolean {
  const h = handle as Record<string, unknown>;
  return typeof h.$queryRawUnsafe === 'function' && typeof h.$executeRawUnsafe === 'function';
}

/**
 * The provider of the client's schema. The generated client records it in `_activeProvider`
 * (underscored, so not promised by Prisma): when it is missing, the server is asked instead.
 */
async function dialectOf(handle: PrismaLike): Promise<SqlDialect | string> {
  const provider = handle._activeProvider;
  if (typeof provider === 'string') {
    if (provider === 'postgresql' || provider === 'postgres' || provider === 'cockroachdb') return 'postgres';
    if (provider === 'mysql') return 'mysql';
    return `a Prisma client for ${provider}`;
  }
  const [row] = (await handle.$queryRawUnsafe('SELECT VERSION() AS v')) as Array<{ v?: unknown }>;
  return /postgres/i.test(String(row?.v)) ? 'postgres' : 'mysql';
}

/**
 * A runner over a Prisma client (Prisma 7, driver adapters `@prisma/adapter-pg` and
 * `@prisma/adapter-mariadb`): `$queryRawUnsafe` and `$executeRawUnsafe` with the values as
 * parameters. An interactive transaction's client runs the statements in that transaction; the
 * root client opens one with `$transaction` where a dialect needs several statements.
 */
export async function prismaRunner(handle: object, dialect?: SqlDialect): Promise<SqlRunner | string> {
  const client = handle as PrismaLike;
  const found = dialect ?? (await dialectOf(client));
  return found === 'postgres' || found === 'mysql' ? runnerFor(client, found) : found;
}

function runnerFor(client: PrismaLike, dialect: SqlDialect): SqlRunner {
  return sqlRunner(
    dialect,
    async (statement) => {
      const { text, values } = placeholders(statement, dialect);
      if (statement.returnsRows) return (await client.$queryRawUnsafe(text, ...values)) as SqlRow[];
      await client.$executeRawUnsafe(text, ...values);
      return [];
    },
    (fn, self) =>
      client.$connect === undefined || typeof client.$transaction !== 'function'
        ? fn(self)
        : client.$transaction((tx) => fn(runnerFor(tx, dialect)), { isolationLevel: 'ReadCommitted' }),
  );
}
