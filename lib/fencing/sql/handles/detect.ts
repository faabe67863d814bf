import type { SqlDialect } from '../identifiers.js';
import { drizzleRunner } from './drizzle.js';
import { knexRunner } from './knex.js';
import { isKysely, kyselyRunner } from './kysely.js';
import { isMysql2, mysql2Runner } from './mysql2.js';
import { isPgQueryable, nodePostgresRunner } from './node-postgres.js';
import { isPrisma, prismaRunner } from './prisma.js';
import type { SqlRunner } from './runner.js';
import { typeOrmKind, typeOrmRunner } from './typeorm.js';

/** What the TypeError for an unsupported handle lists. */
export const ACCEPTED_HANDLES =
  'a node-postgres Pool, PoolClient or Client; a TypeORM DataSource, EntityManager or QueryRunner; ' +
  "a Prisma client or its interactive transaction's client; a Drizzle db or tx (node-postgres, mysql2); " +
  'a Knex instance or transaction; a Kysely instance or transaction; a mysql2 Pool or Connection';

/** Runners already built, per handle (a handle keeps its library and its dialect). */
const runners = new WeakMap<object, Promise<SqlRunner>>();

/**
 * The runner for `handle`, by the members its library gives it (no library is imported to look).
 * `dialect`, when the table was given one, must agree with the handle's. Rejects with a TypeError
 * that names what is accepted when the handle is none of them.
 */
export function runnerOf(handle: unknown, dialect: SqlDialect | undefined): Promise<SqlRunner> {
  if ((typeof handle !== 'object' && typeof handle !== 'function') || handle === null)
    return Promise.reject(unsupported(handle));
  let runner = runners.get(handle);
  if (!runner) {
    runner = build(handle, dialect).then((built) => {
      if (typeof built !== 'string') return built;
      throw new TypeError(`FencedTable supports PostgreSQL and MariaDB/MySQL; got ${built}.`);
    });
    runners.set(handle, runner);
    runner.catch(() => runners.delete(handle));
  }
  return runner.then((r) => {
    if (dialect !== undefined && r.dialect !== dialect)
      throw new TypeError(
        `This FencedTable was built with dialect '${dialect}', but the handle is a ${r.dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB/MySQL'} one.`,
      );
    return r;
  });
}

async function build(handle: object, dialect: SqlDialect | undefined): Promise<SqlRunner | string> {
  if (isPrisma(handle)) return prismaRunner(handle, dialect);
  const knexOrDrizzle = knexRunner(handle) ?? drizzleRunner(handle);
  if (knexOrDrizzle !== undefined) return knexOrDrizzle;
  if (isKysely(handle)) return kyselyRunner(handle);
  const typeOrm = typeOrmKind(handle);
  if (typeOrm !== undefined) return typeOrmRunner(handle, typeOrm);
  if (isMysql2(handle)) return mysql2Runner(handle);
  if (isPgQueryable(handle)) return nodePostgresRunner(handle);
  throw unsupported(handle);
}

function unsupported(handle: unknown): TypeError {
  const got =
    handle === null
      ? 'null'
      : typeof handle === 'object' || typeof handle === 'function'
        ? `${typeof handle === 'function' ? 'a function' : 'an object'} of another kind (${(handle as object).constructor?.name ?? 'no constructor'})`
        : typeof handle;
  return new TypeError(`FencedTable needs a database handle: ${ACCEPTED_HANDLES}; got ${got}.`);
}
