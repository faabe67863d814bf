/** Public helpers for integration tests of code that uses distributed locks. */
export { RedisNodes, assertRedisServerInstalled } from './redis-nodes.js';
export type { RedisNodesOptions, RedisNodeInfo, Persistence } from './redis-nodes.js';
export { REDIS_SERVER_BIN, redisServerVersion, type RedisServerVersion } from './redis-server-binary.js';
export { freePort } from './free-port.js';
export { PostgresServer, type PostgresServerOptions } from './postgres-server.js';
export { RedlockTestingModule, InMemoryLocks, type RedlockTestingOptions } from './redlock-testing.module.js';
export { InMemoryFencedWriter } from './fenced/in-memory-fenced-writer.js';
export { InMemoryFencedTable, type InMemoryFencedTableOptions } from './fenced/in-memory-fenced-table.js';
export type { FencedDoublesOptions, InMemoryFencedTableProvider } from './fenced/fenced-providers.js';
export { SentinelGroup, type SentinelGroupOptions } from './sentinel-group.js';
export { RedisClusterNodes } from './redis-cluster.js';
export { MariaDbServer, type MariaDbServerOptions } from './mariadb-server.js';
export { MemoryServer, type MemoryServerOptions } from './memory/server.js';
export type { KeyspaceImage } from './memory/keyspace.js';
export {
  ConnectionDropped,
  MemoryTransport,
  memoryNode,
  type MemoryNetwork,
  type MemoryTransportOptions,
} from './memory/transport.js';
export type { IoRedisTestClient, IoRedisClusterTestClient } from './test-clients.js';
