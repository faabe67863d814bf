/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS app, as users write it */
/**
 * A CommonJS app's use of `nest-quorum-lock/sql` from plain node: require() of the entry point,
 * a real PostgreSQL started through the tarball's `nest-quorum-lock/testing`, and a node-postgres
 * pool as the handle. Prints one line per check; exits 1 on the first failure.
 */
const assert = require('node:assert/strict');
const { FencedTable } = require('nest-quorum-lock/sql');
const postgresEntry = require('nest-quorum-lock/postgres');
const { PostgresServer } = require('nest-quorum-lock/testing');
const { Pool } = require('pg');

async function main() {
  assert.equal(
    postgresEntry.FencedTable,
    FencedTable,
    'nest-quorum-lock/postgres exports the same FencedTable',
  );
  const server = await PostgresServer.start();
  const pool = new Pool({ connectionString: server.url });
  try {
    const accounts = new FencedTable({ table: 'accounts' });
    await accounts.ensureTable(pool, { columns: { balance: 'bigint' } });
    assert.deepEqual(await accounts.write(pool, 'alice', 10, { balance: '100' }), {
      accepted: true,
      lastToken: 10,
    });
    assert.deepEqual(await accounts.write(pool, 'alice', 7, { balance: '1' }), {
      accepted: false,
      lastToken: 10,
    });
    assert.deepEqual(await accounts.read(pool, 'alice', 9), { accepted: false, lastToken: 10 });
    await assert.rejects(accounts.write({}, 'alice', 11), TypeError);
    console.log(
      'ok fenced-sql: write accepted, lower token refused, refused read without a row, TypeError for {}',
    );
  } finally {
    await pool.end();
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
