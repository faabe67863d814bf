/** Public helpers for integration tests of code that uses distributed locks. */
export { RedisNodes, assertRedisServerInstalled } from './redis-nodes.js';
export { freePort } from './free-port.js';
//# sourceMappingURL=index.js.map