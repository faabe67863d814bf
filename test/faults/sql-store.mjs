/**
 * The worker's counter kept in a SQL database through an ORM (issue 38's fault scenarios), one row
 * per resource in `fault_counters (resource, value, fence_token)`:
 *   typeorm-pg:   TypeORM 1.x DataSource on PostgreSQL;
 *   knex-mariadb: Knex (mysql2 client) on MariaDB.
 * fenced: the library's FencedTable (built, from dist/) given the ORM's own handle: fenced read,
 * then fenced write. unfenced: the same ORM's plain SELECT, then an upsert of the new value with no
 * token check (the control, which must lose updates when a paused holder writes late).
 * The harness creates the table (scenarios-sql.ts) before the workers start.
 */
import { FencedTable } from '../../dist/fencing/sql/index.js';

export const SQL_COUNTERS = { table: 'fault_counters', keyColumn: 'resource' };

/** Opens the ORM's handle for a job; `options`: { kind, url, fenced }. */
export async function openSqlStore(options) {
  const orm = options.kind === 'typeorm-pg' ? await typeOrm(options.url) : await knexMariaDb(options.url);
  const table = new FencedTable(SQL_COUNTERS);
  return {
    /** Reads the counter under `token` (unfenced when token is undefined or the store is). */
    async read(resource, token) {
      if (options.fenced && token !== undefined) {
        const { accepted, row } = await table.read(orm.handle, resource, token);
        return { ok: accepted, value: Number(row?.value ?? 0) };
      }
      return { ok: true, value: await orm.plainRead(resource) };
    },
    /** Writes the counter; resolves whether the store accepted it. */
    async write(resource, token, value) {
      if (options.fenced && token !== undefined)
        return (await table.write(orm.handle, resource, token, { value })).accepted;
      await orm.plainWrite(resource, value);
      return true;
    },
    close: () => orm.close().catch(() => undefined),
  };
}

async function typeOrm(url) {
  const { DataSource } = await import('typeorm');
  const dataSource = new DataSource({ type: 'postgres', url, entities: [], extra: { max: 2 } });
  await dataSource.initialize();
  return {
    handle: dataSource,
    async plainRead(resource) {
      const rows = await dataSource.query('SELECT value FROM fault_counters WHERE resource = $1', [resource]);
      return Number(rows[0]?.value ?? 0);
    },
    async plainWrite(resource, value) {
      await dataSource
        .createQueryBuilder()
        .insert()
        .into('fault_counters')
        .values({ resource, value })
        .orUpdate(['value'], ['resource'])
        .execute();
    },
    close: () => dataSource.destroy(),
  };
}

async function knexMariaDb(url) {
  const { default: knex } = await import('knex');
  const k = knex({ client: 'mysql2', connection: url, pool: { min: 0, max: 2 } });
  return {
    handle: k,
    async plainRead(resource) {
      const row = await k('fault_counters').where({ resource }).first('value');
      return Number(row?.value ?? 0);
    },
    async plainWrite(resource, value) {
      await k('fault_counters').insert({ resource, value }).onConflict('resource').merge(['value']);
    },
    close: () => k.destroy(),
  };
}
