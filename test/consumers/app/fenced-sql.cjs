/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS app, as users write it */
/**
 * A CommonJS app's use of `nest-quorum-lock/sql` from plain node: require() of the entry point,
 * a real PostgreSQL started through the tarball's `nest-quorum-lock/testing`, and a node-postgres
 * client as the handle. Prints one line per check; exits 1 on the first failure. A Client, not a Pool:
 * its end() resolves once its connection is closed, where a Pool's resolves once it has asked its
 * clients to end, and a server stopped then could still tell one of them "terminating connection due
 * to administrator command" (57P01), which the pool throws as an unhandled 'error' (seen once in a
 * loaded run).
 */
const assert = require('node:assert/strict');
const { FencedTable } = require('nest-quorum-lock/sql');
const postgresEntry = require('nest-quorum-lock/postgres');
const { PostgresServer } = require('nest-quorum-lock/testing');
const { Client } = require('pg');

async function main() {
  assert.equal(
    postgresEntry.FencedTable,
    FencedTable,
    'nest-quorum-lock/postgres exports the same FencedTable',
  );
  const server = await PostgresServer.start();
  const client = new Client({ connectionString: server.url });
  try {
    await client.connect();
    const accounts = new FencedTable({ table: 'accounts' });
    await accounts.ensureTable(client, { columns: { balance: 'bigint' } });
    assert.deepEqual(await accounts.write(client, 'alice', 10, { balance: '100' }), {
      accepted: true,
      lastToken: 10,
    });
    assert.deepEqual(await accounts.write(client, 'alice', 7, { balance: '1' }), {
      accepted: false,
      lastToken: 10,
    });
    assert.deepEqual(await accounts.read(client, 'alice', 9), { accepted: false, lastToken: 10 });
    await assert.rejects(accounts.write({}, 'alice', 11), TypeError);
    console.log(
      'ok fenced-sql: write accepted, lower token refused, refused read without a row, TypeError for {}',
    );
  } finally {
    await client.end();
    await server.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
