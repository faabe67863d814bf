import type { RedisServerVersion } from '../../lib/testing/index.js';

/**
 * What the library should say a server is (`status()`, health: `Valkey 8.0.1`, `Redis 7.0.15`),
 * from what its binary says (`--version`): another path to the same fact than the INFO it reads.
 */
export function serverLabel(server: RedisServerVersion): string {
  return `${server.name === 'valkey' ? 'Valkey' : 'Redis'} ${server.version}`;
}
