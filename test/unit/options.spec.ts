import { Redlock, RedlockError, RedlockOptionsError, type RedlockOptions } from '../../lib/index.js';
import { normaliseResources, resolveOptions } from '../../lib/core/resolve-options.js';
import { MemoryLogger } from '../support/cluster.js';

/** Option validation: no Redis needed (nothing here opens a connection, except the even-count check). */

const URLS = ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6380', 'redis://127.0.0.1:6381'];

function rejection(options: unknown): RedlockOptionsError {
  let caught: unknown;
  try {
    resolveOptions(options as RedlockOptions);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RedlockOptionsError);
  expect(caught).toBeInstanceOf(RedlockError);
  expect((caught as Error).name).toBe('RedlockOptionsError');
  return caught as RedlockOptionsError;
}

describe('engine options', () => {
  test('valid options resolve with defaults', () => {
    const o = resolveOptions({ nodes: URLS });
    expect(o).toMatchObject({
      ttl: 10_000,
      driftFactor: 0.01,
      nodeTimeout: 100,
      wait: 0,
      keyPrefix: 'redlock:',
    });
    expect(o.restartGuard).toBe(60_000);
    expect(resolveOptions({ nodes: URLS, ttl: 90_000 }).restartGuard).toBe(90_000);
    expect(resolveOptions({ nodes: URLS, restartGuard: false, ttl: 90_000 }).restartGuard).toBe(false);
    expect(resolveOptions({ nodes: URLS, driftFactor: 0 }).driftFactor).toBe(0);
    expect(
      resolveOptions({ nodes: ['rediss://user:pw@example.com:6380/2', { host: 'h', port: 1 }] }).ttl,
    ).toBe(10_000);
  });

  test.each([
    ['missing options', undefined, 'options'],
    ['no nodes', {}, 'nodes'],
    ['empty nodes', { nodes: [] }, 'nodes'],
    ['nodes not an array', { nodes: 'redis://127.0.0.1:6379' }, 'nodes'],
  ])('%s', (_name, options, option) => {
    expect(rejection(options).option).toBe(option);
  });

  test.each([0, -1, NaN, Infinity, -Infinity, '1000'])('ttl %p is rejected', (ttl) => {
    const err = rejection({ nodes: URLS, ttl });
    expect(err.option).toBe('ttl');
    expect(err.message).toMatch(/Invalid Redlock option `ttl`/);
  });

  test('confirmRelease: false by default, a boolean, anything else rejected naming the fix', () => {
    expect(resolveOptions({ nodes: URLS }).confirmRelease).toBe(false);
    expect(resolveOptions({ nodes: URLS, confirmRelease: true }).confirmRelease).toBe(true);
    for (const confirmRelease of ['true', 1, 'yes']) {
      const err = rejection({ nodes: URLS, confirmRelease });
      expect(err.option).toBe('confirmRelease');
      expect(err.message).toMatch(/true or false/);
    }
  });

  test('failWithoutQuorum: false by default, a boolean, anything else rejected naming the fix', () => {
    expect(resolveOptions({ nodes: URLS }).failWithoutQuorum).toBe(false);
    expect(resolveOptions({ nodes: URLS, failWithoutQuorum: true }).failWithoutQuorum).toBe(true);
    const err = rejection({ nodes: URLS, failWithoutQuorum: 'yes' });
    expect(err.option).toBe('failWithoutQuorum');
    expect(err.message).toMatch(/true or false/);
  });

  test.each([-0.01, 0.5, 0.7, 1, NaN, Infinity, '0.01'])(
    'driftFactor %p outside [0, 0.5) is rejected',
    (driftFactor) => {
      expect(rejection({ nodes: URLS, driftFactor }).option).toBe('driftFactor');
    },
  );

  test('ttl above restartGuard is rejected; equal is allowed', () => {
    const err = rejection({ nodes: URLS, ttl: 5001, restartGuard: 5000 });
    expect(err.option).toBe('ttl');
    expect(err.message).toMatch(/exceeds restartGuard 5000/);
    expect(resolveOptions({ nodes: URLS, ttl: 5000, restartGuard: 5000 }).ttl).toBe(5000);
  });

  test.each([0, -5, NaN, Infinity])('restartGuard %p is rejected', (restartGuard) => {
    expect(rejection({ nodes: URLS, ttl: 1000, restartGuard }).option).toBe('restartGuard');
  });

  test.each([
    [1000, 1000],
    [1001, 1000],
    [0, 1000],
    [-1, 1000],
    [NaN, 1000],
  ])('nodeTimeout %p with ttl %p is rejected', (nodeTimeout, ttl) => {
    expect(rejection({ nodes: URLS, ttl, nodeTimeout }).option).toBe('nodeTimeout');
  });

  test.each([
    ['wait', -1],
    ['retryDelay', -1],
    ['retryJitter', NaN],
    ['fenceIdleTtl', 0],
    ['connectTimeout', -1],
    ['maxHold', 0],
    ['keyPrefix', 5],
  ])('%s = %p is rejected', (option, value) => {
    expect(rejection({ nodes: URLS, [option]: value }).option).toBe(option);
  });

  test.each([
    ['not a url', 'not a url'],
    ['http scheme', 'http://127.0.0.1:6379'],
    ['tcp scheme', 'tcp://127.0.0.1:6379'],
    ['host:port without scheme', '127.0.0.1:6379'],
    ['empty string', ''],
    ['no host', 'redis://'],
  ])('malformed node URL (%s) names the node', (_name, url) => {
    const err = rejection({ nodes: [URLS[0], url, URLS[1]] });
    expect(err.option).toBe('nodes[1]');
    expect(err.message).toMatch(/redis:\/\//); // says what a good URL looks like
  });

  test.each([null, 42, true, undefined])(
    'node %p that is neither URL, options nor client is rejected',
    (node) => {
      expect(rejection({ nodes: [node] }).option).toBe('nodes[0]');
    },
  );

  test('a rejected URL with a password does not echo the password', () => {
    const err = rejection({ nodes: ['http://user:s3cret-pw@127.0.0.1:6379'] });
    expect(err.message).not.toContain('s3cret-pw');
  });

  test('the Redlock constructor validates before opening any connection', () => {
    expect(() => new Redlock({ nodes: [] })).toThrow(RedlockOptionsError);
    expect(() => new Redlock({ nodes: URLS, ttl: -1 })).toThrow(RedlockOptionsError);
  });
});

describe('resource keys', () => {
  test('a string or a non-empty list of non-empty strings, de-duplicated in order', () => {
    expect(normaliseResources('a')).toEqual(['a']);
    expect(normaliseResources(['b', 'a', 'b'])).toEqual(['b', 'a']);
  });

  test.each([
    ['empty string', '', 'keys[0]'],
    ['empty list', [], 'keys'],
    ['empty string in list', ['a', ''], 'keys[1]'],
    ['number in list', ['a', 1], 'keys[1]'],
    ['undefined in list', [undefined], 'keys[0]'],
    ['null', null, 'keys'],
    ['number', 7, 'keys'],
  ])('%s is rejected', (_name, keys, option) => {
    let caught: unknown;
    try {
      normaliseResources(keys as string[]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RedlockOptionsError);
    expect((caught as RedlockOptionsError).option).toBe(option);
  });
});

describe('engine construction (connections to closed ports; no Redis needed)', () => {
  // Ports 1-5 on loopback refuse at once; the engine is closed right after.
  const closedPorts = (n: number) => Array.from({ length: n }, (_, i) => `redis://127.0.0.1:${i + 1}`);

  test('an even node count is allowed, with a warning naming the count and the quorum', async () => {
    const logger = new MemoryLogger();
    const engine = new Redlock({ nodes: closedPorts(4), logger });
    try {
      expect(engine.quorum).toBe(3);
      const warnings = logger.lines.filter((l) => l.startsWith('warn:') && l.includes('even'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/4 Redis nodes configured.*quorum 3.*odd number/);
    } finally {
      await engine.close();
    }
  });

  test('an odd node count gives no even-count warning', async () => {
    const logger = new MemoryLogger();
    const engine = new Redlock({ nodes: closedPorts(3), logger });
    try {
      expect(engine.quorum).toBe(2);
      expect(logger.lines.filter((l) => l.includes('even'))).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  test('acquire rejects bad keys and per-call options with RedlockOptionsError, before any I/O', async () => {
    const engine = new Redlock({
      nodes: closedPorts(3),
      ttl: 1000,
      restartGuard: 2000,
      logger: new MemoryLogger(),
    });
    try {
      for (const keys of ['', [], ['ok', ''], [7 as unknown as string]]) {
        await expect(engine.acquire(keys)).rejects.toBeInstanceOf(RedlockOptionsError);
      }
      await expect(engine.acquire('r', { ttl: 0 })).rejects.toBeInstanceOf(RedlockOptionsError);
      await expect(engine.acquire('r', { ttl: 2001 })).rejects.toThrow(/exceeds restartGuard/);
      await expect(engine.acquire('r', { ttl: 100 })).rejects.toThrow(/not above nodeTimeout/);
      await expect(engine.acquire('r', { wait: -1 })).rejects.toBeInstanceOf(RedlockOptionsError);
      await expect(engine.acquire('r', { maxHold: 0 })).rejects.toBeInstanceOf(RedlockOptionsError);
    } finally {
      await engine.close();
    }
  });
});
