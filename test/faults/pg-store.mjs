/**
 * The worker's counter kept in PostgreSQL (S1-pg), one row per resource in `fault_counters`:
 *   fenced:   the library's FencedTable (built, from dist/): fenced read, then fenced write;
 *   unfenced: plain SELECT, then an upsert of the new value, no token check (the control, which
 *             must lose updates when a paused holder writes late).
 * The harness creates the table (scenarios-pg.ts) before the workers start.
 */
import pg from 'pg';
import { FencedTable } from '../../dist/fencing/postgres/index.js';

export const PG_COUNTERS = { table: 'fault_counters', keyColumn: 'resource' };

/** Opens one connection for a job; `options`: { url, fenced }. */
export async function openPgStore(options) {
  const client = new pg.Client({ connectionString: options.url });
  client.on('error', () => undefined);
  await client.connect();
  const table = new FencedTable(PG_COUNTERS);
  return {
    /** Reads the counter under `token` (unfenced when token is undefined or the store is). */
    async read(resource, token) {
      if (options.fenced && token !== undefined) {
        const { accepted, row } = await table.read(client, resource, token);
        return { ok: accepted, value: Number(row?.value ?? 0) }; // a refused read has no row
      }
      const { rows } = await client.query('SELECT value FROM fault_counters WHERE resource = $1', [resource]);
      return { ok: true, value: Number(rows[0]?.value ?? 0) };
    },
    /** Writes the counter; resolves whether the store accepted it. */
    async write(resource, token, value) {
      if (options.fenced && token !== undefined)
        return (await table.write(client, resource, token, { value })).accepted;
      await client.query(
        'INSERT INTO fault_counters (resource, value) VALUES ($1, $2) ' +
          'ON CONFLICT (resource) DO UPDATE SET value = EXCLUDED.value',
        [resource, value],
      );
      return true;
    },
    close: () => client.end().catch(() => undefined),
  };
}
