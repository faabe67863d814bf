/** Public helpers for integration tests of code that uses distributed locks. */
export { RedisNodes, assertRedisServerInstalled } from './redis-nodes.js';
export type { RedisNodesOptions, RedisNodeInfo, Persistence } from './redis-nodes.js';
export { freePort } from './free-port.js';
export { PostgresServer } from './postgres-server.js';
export type { PostgresServerOptions } from './postgres-server.js';
export { RedlockTestingModule, InMemoryLocks } from './redlock-testing.module.js';
export type { RedlockTestingOptions } from './redlock-testing.module.js';
export { SentinelGroup } from './sentinel-group.js';
export type { SentinelGroupOptions } from './sentinel-group.js';
export { RedisClusterNodes } from './redis-cluster.js';
export { MariaDbServer } from './mariadb-server.js';
export type { MariaDbServerOptions } from './mariadb-server.js';
export { MemoryVoter } from './memory/memory-voter.js';
export { MemoryState, type MemoryClock } from './memory/memory-state.js';
export type { IoRedisTestClient, IoRedisClusterTestClient } from './test-clients.js';
