import { Preflight } from '../../lib/core/preflight.js';
import {
  checkServer,
  describeSoftware,
  parseInfo,
  serverSoftware,
  trustedAcrossRestarts,
  type ServerFacts,
} from '../../lib/core/voter/server.js';
import { resolveOptions } from '../../lib/core/resolve-options.js';
import { NodeConfigurationError, RedlockOptionsError } from '../../lib/index.js';
import { MemoryLogger } from '../support/cluster.js';

/** Preflight's pure checks, over facts objects (no Redis). */
const healthy: ServerFacts = {
  runId: 'a'.repeat(40),
  redisMode: 'standalone',
  role: 'master',
  connectedReplicas: 0,
  secondReplOffset: -1,
  maxmemoryPolicy: 'noeviction',
  appendonly: 'no',
  appendfsync: 'everysec',
  clusterEnabled: 'no',
  denied: [],
  user: 'default',
};
const problems = (facts: Partial<ServerFacts>) =>
  checkServer({ ...healthy, ...facts }).map((f) => `${f.severity}: ${f.problem}`);

describe('checkServer', () => {
  test('a healthy primary has nothing to report', () => {
    expect(checkServer(healthy)).toEqual([]);
  });

  test.each([
    'allkeys-lru',
    'allkeys-lfu',
    'allkeys-random',
    'volatile-lru',
    'volatile-lfu',
    'volatile-random',
    'volatile-ttl',
  ])('maxmemory-policy %s is an error', (policy) => {
    expect(problems({ maxmemoryPolicy: policy })).toEqual([
      expect.stringMatching(`^error: maxmemory-policy is ${policy}`),
    ]);
  });

  test('a replica, a cluster node, a primary with replicas', () => {
    expect(problems({ role: 'slave', primary: '10.0.0.1:6379' })).toEqual([
      expect.stringMatching(/^error: it is a replica of 10.0.0.1:6379/),
    ]);
    expect(problems({ clusterEnabled: 'yes' })).toEqual([expect.stringMatching(/^error: .*Cluster node/)]);
    expect(problems({ redisMode: 'cluster' })).toEqual([expect.stringMatching(/^error: .*Cluster node/)]);
    expect(problems({ connectedReplicas: 2 })).toEqual([expect.stringMatching(/^notice: it has 2 replica/)]);
  });

  test('NOPERM names the commands and the ACL rule that grants them', () => {
    const [finding] = checkServer({
      ...healthy,
      denied: ['+config|get'],
      user: 'app',
      maxmemoryPolicy: undefined,
    });
    expect(finding!.problem).toContain('ACL user "app" may not run CONFIG GET (NOPERM)');
    expect(finding!.fix).toContain('ACL SETUSER app +config|get');
    expect(finding!.fix).toContain("preflight: 'off'");
    const denied = ['+incr', '~redlock:*', '&__redlock_wake__:*'];
    const [script] = checkServer({ ...healthy, denied, user: 'app' });
    expect(script!.problem).toContain(
      'may not run INCR, access the keys redlock:*, publish to __redlock_wake__:* (NOPERM)',
    );
    expect(script!.fix).toMatch(/^ACL SETUSER app \+incr ~redlock:\* &__redlock_wake__:\* /);
    expect(script!.fix).not.toContain("preflight: 'off'");
  });
});

test('trustedAcrossRestarts: appendonly yes + appendfsync always, and not a promoted replica', () => {
  expect(trustedAcrossRestarts({ ...healthy, appendonly: 'yes', appendfsync: 'always' })).toBe(true);
  expect(trustedAcrossRestarts({ ...healthy, appendonly: 'yes', appendfsync: 'everysec' })).toBe(false);
  expect(trustedAcrossRestarts({ ...healthy, appendonly: 'no', appendfsync: 'always' })).toBe(false);
  expect(
    trustedAcrossRestarts({ ...healthy, appendonly: 'yes', appendfsync: 'always', secondReplOffset: 1 }),
  ).toBe(false);
  expect(
    trustedAcrossRestarts({
      ...healthy,
      appendonly: 'yes',
      appendfsync: 'always',
      secondReplOffset: undefined,
    }),
  ).toBe(false);
});

test('parseInfo reads field:value lines', () => {
  expect(parseInfo('# Server\r\nrun_id:abc\r\nredis_mode:standalone\r\n')).toEqual({
    run_id: 'abc',
    redis_mode: 'standalone',
  });
});

describe('the server software INFO names', () => {
  // INFO server of each, as the servers print it (Valkey keeps redis_version for compatibility).
  const valkey8 = parseInfo(
    '# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n',
  );
  const redis74 = parseInfo('# Server\r\nredis_version:7.4.1\r\nredis_git_sha1:00000000\r\n');

  test('Valkey by its name and own version, not the Redis version it reports for compatibility', () => {
    expect(serverSoftware(valkey8)).toEqual({ name: 'Valkey', version: '8.0.1' });
    expect(serverSoftware(redis74)).toEqual({ name: 'Redis', version: '7.4.1' });
    expect(serverSoftware({})).toBeUndefined(); // INFO denied: nothing to say
  });

  test("a cluster's masters in one text, each distinct server once", () => {
    const [v, r] = [serverSoftware(valkey8), serverSoftware(redis74)];
    expect(describeSoftware([v, v, undefined])).toBe('Valkey 8.0.1');
    expect(describeSoftware([v, r, r])).toBe('Redis 7.4.1, Valkey 8.0.1');
    expect(describeSoftware([undefined])).toBeUndefined();
  });
});

describe('Preflight (engine-wide)', () => {
  const report = (serverId: string, findings: ReturnType<typeof checkServer> = []) => ({
    serverId,
    findings,
  });

  test('the same server behind two voters: the second is refused', () => {
    const preflight = new Preflight('error', new MemoryLogger());
    const [a, b] = [{}, {}];
    expect(preflight.review(a, a, 'redis://127.0.0.1:6379', report('x'))).toBeUndefined();
    const refusal = preflight.review(b, b, 'redis://localhost:6379', report('x'));
    expect(refusal).toBeInstanceOf(NodeConfigurationError);
    expect(refusal!.message).toContain('same Redis server as redis://127.0.0.1:6379 (run_id x)');
    expect(preflight.bootstrapDone([a, b])!.node).toBe('redis://localhost:6379');
  });

  test('the same Valkey server twice is named as Valkey', () => {
    const preflight = new Preflight('error', new MemoryLogger());
    const [a, b] = [{}, {}];
    preflight.review(a, a, 'redis://127.0.0.1:6379', { ...report('v'), server: 'Valkey 8.0.1' });
    const refusal = preflight.review(b, b, 'redis://localhost:6379', {
      ...report('v'),
      server: 'Valkey 8.0.1',
    });
    expect(refusal!.message).toContain('same Valkey server as redis://127.0.0.1:6379 (run_id v)');
  });

  test('the bootstrap error lists the nodes in the configured order, not the order they answered in', () => {
    const preflight = new Preflight('error', new MemoryLogger());
    const lru = checkServer({ ...healthy, maxmemoryPolicy: 'allkeys-lru' });
    const [a, b, c] = [{}, {}, {}];
    preflight.review(c, c, 'n3', report('r3', lru)); // the last configured node answers first
    preflight.review(a, a, 'n1', report('r1', lru));
    preflight.review(b, b, 'n2', report('r2')); // a healthy one
    expect(preflight.bootstrapDone([a, b, c])!.errors.map((e) => e.node)).toEqual(['n1', 'n3']);
  });

  test("'warn' logs and lets the voter vote; errors after bootstrap are logged", () => {
    const logger = new MemoryLogger();
    const lru = checkServer({ ...healthy, maxmemoryPolicy: 'allkeys-lru' });
    expect(new Preflight('warn', logger).review({}, {}, 'n1', report('y', lru))).toBeUndefined();
    expect(logger.lines[0]).toMatch(/^warn: Redis node n1: maxmemory-policy is allkeys-lru.*it votes anyway/);
    const strict = new Preflight('error', logger);
    expect(strict.bootstrapDone([])).toBeUndefined();
    expect(strict.review({}, {}, 'n2', report('z', lru))).toBeInstanceOf(NodeConfigurationError);
    expect(logger.lines.at(-1)).toMatch(/^error: Redis node n2: .*does not vote until it is fixed/s);
  });
});

test("the preflight option: 'error' by default, validated", () => {
  expect(resolveOptions({ nodes: ['redis://a:6379'] }).preflight).toBe('error');
  expect(resolveOptions({ nodes: ['redis://a:6379'], preflight: 'off' }).preflight).toBe('off');
  expect(() => resolveOptions({ nodes: ['redis://a:6379'], preflight: 'strict' as 'off' })).toThrow(
    RedlockOptionsError,
  );
});
