import { NodeConfigurationError } from '../../../lib/index.js';
import { Deployment, rejection, until } from './support.js';

/**
 * Preflight against real misconfigured servers: each one must fail the bootstrap (connect()) with
 * a NodeConfigurationError naming the node, the problem and the fix; 'warn' logs and runs.
 */
describe('preflight (real misconfigured servers)', () => {
  const deployment = new Deployment();
  afterEach(() => deployment.close());

  /** Two healthy nodes plus one started with `extraArgs`: the urls, the odd one last. */
  async function withOddNode(extraArgs: string[]): Promise<{ urls: string[]; odd: string }> {
    const good = await deployment.nodes(2);
    const odd = await deployment.nodes(1, { extraArgs });
    return { urls: [...good.urls, odd.url(0)], odd: odd.url(0) };
  }

  test.each(['allkeys-lru', 'volatile-lru'])(
    'maxmemory-policy %s fails the bootstrap, naming node, problem and fix',
    async (policy) => {
      const { urls, odd } = await withOddNode(['--maxmemory-policy', policy]);
      const { engine } = deployment.engine(urls);
      const err = await rejection(engine.connect());
      expect(err).toBeInstanceOf(NodeConfigurationError);
      const e = err as NodeConfigurationError;
      expect(e.node).toBe(odd);
      expect(e.problem).toContain(`maxmemory-policy is ${policy}`);
      expect(e.problem).toContain('volatile-* policies evict them');
      expect(e.fix).toContain('CONFIG SET maxmemory-policy noeviction');
      expect(e.message).toContain(odd);
      // The engine closed itself: a failed bootstrap leaves no connection behind.
      await expect(engine.acquire('r')).rejects.toThrow('closed');
    },
  );

  test("'warn' logs the problem and runs (the node votes)", async () => {
    const { urls, odd } = await withOddNode(['--maxmemory-policy', 'allkeys-lru']);
    const { engine, logger } = deployment.engine(urls, { preflight: 'warn' });
    await engine.connect();
    expect(logger.lines.join('\n')).toContain(`warn: Redis node ${odd}: maxmemory-policy is allkeys-lru`);
    const lock = await engine.acquire('warned');
    expect(engine.status().every((s) => s.reachable)).toBe(true);
    await lock.release();
  });

  test("'off' checks nothing", async () => {
    const { urls } = await withOddNode(['--maxmemory-policy', 'allkeys-lru']);
    const { engine, logger } = deployment.engine(urls, { preflight: 'off' });
    await engine.connect();
    expect(logger.lines.join('\n')).not.toContain('maxmemory-policy');
  });

  test('the same server listed twice (127.0.0.1 and localhost) fails the bootstrap', async () => {
    const nodes = await deployment.nodes(2);
    const port = nodes.port(0);
    const { engine } = deployment.engine([
      nodes.url(0),
      { host: 'localhost', port, family: 4 },
      nodes.url(1),
    ]);
    const err = (await rejection(engine.connect())) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.message).toMatch(/same Redis server as redis:\/\/(127\.0\.0\.1|localhost):\d+ \(run_id \w+\)/);
    expect(err.fix).toContain('list every server once');
  });

  test('a replica fails the bootstrap', async () => {
    const primary = await deployment.nodes(1);
    const { urls, odd } = await withOddNode(['--replicaof', '127.0.0.1', String(primary.port(0))]);
    const { engine } = deployment.engine(urls);
    const err = (await rejection(engine.connect())) as NodeConfigurationError;
    expect(err.node).toBe(odd);
    expect(err.problem).toContain(`is a replica of 127.0.0.1:${primary.port(0)}`);
    expect(err.fix).toContain('sentinels');
  });

  test('a cluster node given as a plain node fails the bootstrap', async () => {
    const { urls, odd } = await withOddNode([
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
    ]);
    const { engine } = deployment.engine(urls);
    const err = (await rejection(engine.connect())) as NodeConfigurationError;
    expect(err.node).toBe(odd);
    expect(err.problem).toContain('Redis Cluster node given as a plain node');
  });

  test('several problems: one error lists them all', async () => {
    const good = await deployment.nodes(1);
    const lru = await deployment.nodes(1, { extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
    const cluster = await deployment.nodes(1, { extraArgs: ['--cluster-enabled', 'yes'] });
    const { engine } = deployment.engine([good.url(0), lru.url(0), cluster.url(0)]);
    const err = (await rejection(engine.connect())) as NodeConfigurationError;
    expect(err.errors.map((e) => e.node).sort()).toEqual([lru.url(0), cluster.url(0)].sort());
    expect(err.message).toContain('Preflight found 2 problems');
  });

  test('a primary with a replica is reported, and votes', async () => {
    const primary = await deployment.nodes(1);
    await deployment.nodes(1, { extraArgs: ['--replicaof', '127.0.0.1', String(primary.port(0))] });
    await until(async () => (await primary.client(0).info('replication')).includes('connected_slaves:1'));
    const good = await deployment.nodes(2);
    const { engine, logger } = deployment.engine([primary.url(0), ...good.urls]);
    await engine.connect();
    expect(logger.lines.join('\n')).toContain(`log: Redis node ${primary.url(0)}: it has 1 replica(s)`);
    expect(engine.status().every((s) => s.reachable)).toBe(true);
  });

  test('an ACL user without INFO and CONFIG: the error names exactly what is missing', async () => {
    const nodes = await deployment.nodes(3, {
      extraArgs: ['--user', 'locker', 'on', '>pw', '~*', '&*', '+@all', '-info', '-config'],
    });
    const urls = nodes.ports.map((port) => `redis://locker:pw@127.0.0.1:${port}`);
    const { engine } = deployment.engine(urls);
    const err = (await rejection(engine.connect())) as NodeConfigurationError;
    expect(err.errors).toHaveLength(3);
    const one = err.errors[0]!;
    expect(one.node).toBe(`redis://locker:***@127.0.0.1:${nodes.port(0)}`); // never the password
    expect(one.problem).toContain('ACL user "locker" may not run INFO and CONFIG GET (NOPERM)');
    expect(one.fix).toContain('ACL SETUSER locker +info +config|get');
    expect(one.fix).toContain("preflight: 'off'");
    expect(err.message).not.toContain(':pw@');
  });

  test('a node down at bootstrap is checked when it connects, and never votes when it fails', async () => {
    const good = await deployment.nodes(2);
    const late = await deployment.nodes(1, { extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
    await late.kill(0);
    const { engine, logger } = deployment.engine([...good.urls, late.url(0)], { connectTimeout: 500 });
    const statuses = await engine.connect(); // a minority down: the bootstrap goes on
    expect(statuses[2]!.reachable).toBe(false);
    await late.revive(0);
    await until(() => logger.lines.some((l) => l.startsWith('error:') && l.includes('maxmemory-policy')));
    expect(logger.lines.join('\n')).toContain('This node does not vote until it is fixed and reconnects');
    expect(engine.status()[2]).toMatchObject({
      reachable: false,
      error: expect.stringContaining('maxmemory-policy'),
    });
    const lock = await engine.acquire('late');
    expect(await late.client(0).exists('redlock:{late}')).toBe(0); // it never voted
    await lock.release();
    // connect() again (a second module, a health check) does not wait out connectTimeout for a
    // node that was refused: it will not vote until it reconnects.
    const started = performance.now();
    await engine.connect().catch(() => undefined);
    expect(performance.now() - started).toBeLessThan(500); // its connectTimeout
  });

  test('a healthy node down at bootstrap votes once it connected and was checked', async () => {
    const nodes = await deployment.nodes(3);
    await nodes.kill(2);
    const { engine } = deployment.engine(nodes.urls, { connectTimeout: 300 });
    await engine.connect();
    expect(engine.status()[2]!.reachable).toBe(false);
    await nodes.revive(2);
    await until(() => engine.status()[2]!.reachable);
    const lock = await engine.acquire('late-ok');
    await until(async () => (await nodes.client(2).exists('redlock:{late-ok}')) === 1, 1000);
    await lock.release();
  });
});
