/**
 * The minimal ACL of the lock user, as the README documents it ("Deploying safely"), for
 * \`redis-server --user locker ...\`. test/integration/deployments/acl.spec.ts checks it, and
 * \`REDLOCK_TEST_ACL=1\` runs the engine suite (TestCluster) under it.
 */
export const MINIMAL_ACL = [
  'on',
  '>lock-secret',
  'resetkeys',
  '~redlock:*',
  'resetchannels',
  '&__redlock_wake__:*',
  '-@all',
  // The engine itself: its scripts, health checks, wake-ups, and preflight.
  '+evalsha',
  '+eval',
  '+script|load',
  '+ping',
  '+subscribe',
  '+unsubscribe',
  '+info',
  '+config|get',
  // What the scripts call: Redis checks a script's commands against the caller's ACL too.
  '+get',
  '+set',
  '+del',
  '+exists',
  '+incr',
  '+pexpire',
  '+pttl',
  '+time',
  '+zadd',
  '+zrem',
  '+zpopmin',
  '+publish',
  '+scan', // the identity guard drops the fence counters of a server that lost writes
  // Read-write locks: the readers of a key (a hash) and the head of its line.
  '+hset',
  '+hget',
  '+hdel',
  '+hgetall',
  '+hexists',
  '+zrange',
  '+zscore',
];

/** The password of the lock user in tests. */
export const LOCK_USER = { username: 'locker', password: 'lock-secret' } as const;

/** Whether the engine suite runs its engines as the minimal lock user. */
export const underMinimalAcl = process.env.REDLOCK_TEST_ACL === '1';
