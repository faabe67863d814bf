import { existsSync } from 'node:fs';
import pg from 'pg';
import { PostgresServer } from 'nest-quorum-lock/testing';

describe('PostgresServer (a real PostgreSQL started by the test)', () => {
  test('starts on a free port, answers queries, and close() ends it by pid and removes its directory', async () => {
    const server = await PostgresServer.start();
    const pid = server.pid!;
    // Its data directory (a private field: what close() must remove).
    const dir = (server as unknown as { dir: { path: string } }).dir.path;
    try {
      expect(pid).toBeGreaterThan(0);
      expect(existsSync(dir)).toBe(true);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ v: string }>(
          "SELECT current_setting('server_version_num') AS v",
        );
        expect(Number(rows[0]!.v)).toBeGreaterThanOrEqual(150000);
      } finally {
        await client.end();
      }
    } finally {
      await server.close();
    }
    expect(server.pid).toBeUndefined();
    expect(() => process.kill(pid, 0)).toThrow(); // the postmaster is gone
    expect(existsSync(dir)).toBe(false);
  });
});
