import { NodeConfigurationError } from '../../../lib/index.js';
import { MINIMAL_ACL } from '../../support/acl.js';
import { Deployment, until } from './support.js';

/**
 * The minimal ACL of the lock user, as the README documents it ("Deploying safely"): the engine
 * works under it (preflight included): acquire, waiting and hand-off, extend, release, inspect.
 */

describe('minimal ACL for the lock user', () => {
  const deployment = new Deployment();
  afterAll(() => deployment.close());

  test('the engine works under it: acquire, wait and hand-off, extend, release, inspect, read-write locks, identity guard', async () => {
    const nodes = await deployment.nodes(3, {
      persistence: 'aof-everysec',
      extraArgs: ['--user', 'locker', ...MINIMAL_ACL],
    });
    const urls = nodes.ports.map((port) => `redis://locker:lock-secret@127.0.0.1:${port}`);
    const { engine: a, logger } = deployment.engine(urls, { restartGuard: 60_000, ttl: 2000 });
    const { engine: b } = deployment.engine(urls, { restartGuard: 60_000, ttl: 2000 });
    // The guard is on: nodes initialised long ago (marker written by an admin).
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).set('redlock:__restart_guard__', '0')));
    await a.connect();
    await b.connect();
    expect(a.status().every((s) => s.reachable)).toBe(true);

    const first = await a.acquire('acl');
    await first.extend(2000);
    expect(await a.inspect('acl')).toMatchObject({ held: true, fencingToken: first.fencingToken });
    const waiting = b.acquire('acl', { wait: 5000 }); // queued; handed over on release
    setTimeout(() => void first.release(), 100);
    const second = await waiting;
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.release();
    expect((await b.inspect('acl')).held).toBe(false);
    // Read-write locks: readers share, a writer queued behind them is handed the key, and a
    // writer's release lets the readers queued behind it in (the reader scripts' hash and queue
    // commands run under the ACL too).
    const readers = await Promise.all([
      a.acquire('acl-rw', { mode: 'read' }),
      b.acquire('acl-rw', { mode: 'read' }),
    ]);
    const writer = a.acquire('acl-rw', { wait: 5000 });
    setTimeout(() => void Promise.all(readers.map((r) => r.release())), 100);
    const written = await writer;
    expect(written.fencingToken).toBeGreaterThanOrEqual(Math.max(...readers.map((r) => r.fencingToken)));
    const queuedReader = b.acquire('acl-rw', { mode: 'read', wait: 5000 });
    setTimeout(() => void written.release(), 100);
    await (await queuedReader).release();
    // A restart: the identity check (and its SCAN of the fence counters) runs under the ACL too.
    await nodes.kill(0);
    await nodes.revive(0);
    await until(() => a.status()[0]!.abstainingUntil !== undefined);
    expect(await nodes.client(0).exists('redlock:{acl}:fence')).toBe(0);
    expect(logger.lines.filter((l) => /NOPERM|error:|could not be checked/.test(l))).toEqual([]);
  });

  test.each([
    ['+incr', 'run INCR', '+incr'],
    ['+zpopmin', 'run ZPOPMIN', '+zpopmin'],
    ['+hset', 'run HSET', '+hset'],
    ['~redlock:*', 'access the keys redlock:*', '~redlock:*'],
    ['&__redlock_wake__:*', 'publish to __redlock_wake__:*', '&__redlock_wake__:*'],
  ])('a user without %s gets a bootstrap error that names it', async (rule, problem, fix) => {
    const acl = MINIMAL_ACL.filter((r) => r !== rule);
    const nodes = await deployment.nodes(3, { extraArgs: ['--user', 'locker', ...acl] });
    const urls = nodes.ports.map((port) => `redis://locker:lock-secret@127.0.0.1:${port}`);
    const { engine } = deployment.engine(urls);
    const err = (await engine.connect().catch((e: unknown) => e)) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.errors).toHaveLength(3);
    expect(err.errors[0]!.problem).toContain(`ACL user "locker" may not ${problem} (NOPERM)`);
    expect(err.errors[0]!.fix).toContain(`ACL SETUSER locker ${fix} `);
  });
});
