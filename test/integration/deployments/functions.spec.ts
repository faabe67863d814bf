import { runCli } from '../../../lib/cli/run.js';
import { FUNCTION_LIBRARY } from '../../../lib/core/scripts/library.js';
import { NodeConfigurationError, QuorumUnavailableError } from '../../../lib/index.js';
import { RedisClusterNodes, type RedisNodes } from '../../../lib/testing/index.js';
import { MINIMAL_ACL } from '../../support/acl.js';
import { Deployment, rejection, until } from './support.js';

/**
 * `scripts: 'functions'` for servers that refuse EVAL: the lock user of these servers may not run
 * EVAL, EVALSHA or SCRIPT (the minimal ACL with FCALL instead). The conformance table's functions
 * columns run every voter behaviour this way; here, what is the engine's: who loads the library,
 * preflight's finding where nobody may, and a server that lost it.
 */

const SCRIPTLESS = MINIMAL_ACL.filter((rule) => !['+eval', '+evalsha', '+script|load'].includes(rule));
/** The lock user, allowed to load the library itself. */
const LOADS = ['--user', 'locker', ...SCRIPTLESS, '+fcall', '+fcall_ro', '+function|load'];
/** The lock user, not allowed to: an administrator loads it. */
const CANNOT_LOAD = ['--user', 'locker', ...SCRIPTLESS, '+fcall', '+fcall_ro'];

const urlsOf = (nodes: RedisNodes) =>
  nodes.ports.map((port) => `redis://locker:lock-secret@127.0.0.1:${port}`);

/** Whether node `index` has this version's library (FUNCTION LIST as the default user). */
async function hasLibrary(nodes: RedisNodes, index: number): Promise<boolean> {
  const list = (await nodes
    .client(index)
    .call('FUNCTION', 'LIST', 'LIBRARYNAME', FUNCTION_LIBRARY.name)) as unknown[];
  return list.length > 0;
}

describe("scripts: 'functions' under a lock user that may not EVAL", () => {
  const deployment = new Deployment();
  afterAll(() => deployment.close());

  test('the engine loads the library itself; a server restarted empty gets it again and abstains under the restart guard', async () => {
    const nodes = await deployment.nodes(3, { extraArgs: LOADS });
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).set('redlock:__restart_guard__', '0')));
    const { engine, logger } = deployment.engine(urlsOf(nodes), {
      scripts: 'functions',
      restartGuard: 60_000,
      ttl: 2000,
    });
    await engine.connect();
    expect(await Promise.all([0, 1, 2].map((i) => hasLibrary(nodes, i)))).toEqual([true, true, true]);
    const first = await engine.acquire('fn');
    await first.extend(2000);
    expect(await engine.inspect('fn')).toMatchObject({ held: true, fencingToken: first.fencingToken });
    await first.release();

    // Lost while connected (FUNCTION FLUSH): the next call loads it again and goes on.
    await nodes.client(1).call('FUNCTION', 'FLUSH');
    // (A round decides on the first majority: node 1's vote may still be on its way.)
    await (await engine.acquire('fn')).release();
    await until(() => hasLibrary(nodes, 1));

    // A restart without persistence loses the library and the restart-guard marker: the library
    // is loaded again on the new connection, and the server abstains for the guard all the same.
    await nodes.kill(0);
    await nodes.revive(0);
    await until(() => engine.status()[0]!.abstainingUntil !== undefined);
    expect(await hasLibrary(nodes, 0)).toBe(true);
    const second = await engine.acquire('fn');
    expect(await nodes.client(0).exists('redlock:{fn}')).toBe(0);
    expect(await nodes.client(1).exists('redlock:{fn}')).toBe(1);
    await second.release();
    expect(logger.lines.filter((l) => /NOPERM|FUNCTION|could not be checked/.test(l))).toEqual([]);
  });

  test('at maxmemory under noeviction a held lock is still extended and released, as EVAL does (PEXPIRE, DEL)', async () => {
    const nodes = await deployment.nodes(3, { extraArgs: LOADS });
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).set('redlock:__restart_guard__', '0')));
    const { engine } = deployment.engine(urlsOf(nodes), { scripts: 'functions', ttl: 2000 });
    await engine.connect();
    const lock = await engine.acquire('fn-oom');
    const all = [0, 1, 2];
    // Out of memory: every command that may grow it is refused (maxmemory 1 byte, noeviction).
    await Promise.all(all.map((i) => nodes.client(i).config('SET', 'maxmemory', '1')));
    try {
      expect(
        await nodes
          .client(0)
          .set('grows', 'x')
          .catch((e: Error) => e.message),
      ).toMatch(/^OOM/);
      await lock.extend(5000);
      const ttls = await Promise.all(all.map((i) => nodes.client(i).pttl('redlock:{fn-oom}')));
      for (const ttl of ttls) expect(ttl).toBeGreaterThan(2000);
      await lock.release();
      await until(async () => {
        const left = await Promise.all(all.map((i) => nodes.client(i).exists('redlock:{fn-oom}')));
        return left.every((n) => n === 0);
      });
    } finally {
      await Promise.all(all.map((i) => nodes.client(i).config('SET', 'maxmemory', '0')));
    }
  });

  test('where the lock user may not FUNCTION LOAD: preflight names each node and the missing version; loaded by an administrator, the engine locks', async () => {
    const nodes = await deployment.nodes(3, { extraArgs: CANNOT_LOAD });
    const urls = urlsOf(nodes);
    const { engine } = deployment.engine(urls, { scripts: 'functions' });
    const err = (await engine.connect().catch((e: unknown) => e)) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.errors.map((e) => e.node)).toEqual(
      nodes.ports.map((port) => `redis://locker:***@127.0.0.1:${port}`),
    );
    expect(err.errors[0]!.problem).toBe(
      `it lacks the FUNCTION library ${FUNCTION_LIBRARY.name} (version ${FUNCTION_LIBRARY.version} of the lock's ` +
        `scripts, option scripts: 'functions') and its ACL user "locker" may not FUNCTION LOAD it`,
    );
    expect(err.errors[0]!.fix).toContain(
      'npx nest-quorum-lock functions | redis-cli -h HOST -p PORT -x FUNCTION LOAD',
    );

    // What the command line prints is what an administrator loads.
    const printed = runCli(['functions']);
    expect(printed).toEqual({ stdout: FUNCTION_LIBRARY.source, stderr: '', code: 0 });
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).call('FUNCTION', 'LOAD', printed.stdout)));
    const { engine: loaded, logger } = deployment.engine(urls, { scripts: 'functions' });
    await loaded.connect();
    const lock = await loaded.acquire('fn-admin');
    await lock.release();

    // Lost again, and nobody here may load it: the node's vote fails with an error that says why.
    await Promise.all([0, 1, 2].map((i) => nodes.client(i).call('FUNCTION', 'FLUSH')));
    const failed = await rejection(loaded.acquire('fn-admin'));
    expect(failed).toBeInstanceOf(QuorumUnavailableError);
    const reasons = (failed as QuorumUnavailableError).failures.map((f) => f.reason);
    expect(reasons.length).toBeGreaterThanOrEqual(2); // a round stops once a majority is out of reach
    for (const reason of reasons) {
      expect(reason).toContain(`the FUNCTION library ${FUNCTION_LIBRARY.name}`);
      expect(reason).toContain('its ACL user may not load it');
    }

    // A restart without persistence: the new connection is checked, and the node does not vote,
    // saying why, until the library is back (and its next connection is checked).
    await nodes.kill(0);
    await nodes.revive(0);
    await until(() => /FUNCTION library/.test(loaded.status()[0]!.error ?? ''));
    expect(loaded.status()[0]).toMatchObject({ reachable: false });
    expect(logger.lines.some((l) => l.includes(`lacks the FUNCTION library ${FUNCTION_LIBRARY.name}`))).toBe(
      true,
    );
  });

  test('a Cluster: the library is loaded on every master; where the user may not, preflight names each master', async () => {
    const scriptless = ['+@all', '-eval', '-evalsha', '-eval_ro', '-evalsha_ro', '-script'];
    const cluster = await RedisClusterNodes.start(3, {
      extraArgs: [
        ...['--user', 'loader', 'on', '>loader-pw', '~*', '&*', ...scriptless],
        ...['--user', 'locker', 'on', '>lock-secret', '~*', '&*', ...scriptless, '-function'],
      ],
    });
    try {
      const node = (username: string, password: string) => ({
        cluster: cluster.startupNodes,
        options: { redisOptions: { username, password } },
      });
      const { engine: refused } = deployment.engine([node('locker', 'lock-secret')], {
        scripts: 'functions',
      });
      const err = (await refused.connect().catch((e: unknown) => e)) as NodeConfigurationError;
      expect(err).toBeInstanceOf(NodeConfigurationError);
      expect(err.errors).toHaveLength(3);
      for (const e of err.errors) {
        expect(e.node).toMatch(/^cluster:\/\/.* \(shard 127\.0\.0\.1:\d+\)$/);
        expect(e.problem).toContain(`lacks the FUNCTION library ${FUNCTION_LIBRARY.name}`);
      }

      const { engine: loader } = deployment.engine([node('loader', 'loader-pw')], { scripts: 'functions' });
      await loader.connect();
      const masters = cluster.nodes.ports.map((_, i) => i);
      expect(await Promise.all(masters.map((i) => hasLibrary(cluster.nodes, i)))).toEqual([true, true, true]);
      // Now loaded, the user that may not load it locks, on every master's slots.
      const { engine } = deployment.engine([node('locker', 'lock-secret')], { scripts: 'functions' });
      await engine.connect();
      const locks = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => engine.acquire(`fn-${k}`)));
      await Promise.all(locks.map((lock) => lock.release()));
    } finally {
      await deployment.close();
      await cluster.nodes.close();
    }
  });

  test("with scripts: 'eval' the same user is refused (what the option is for)", async () => {
    const nodes = await deployment.nodes(3, { extraArgs: LOADS });
    const { engine } = deployment.engine(urlsOf(nodes));
    const err = (await engine.connect().catch((e: unknown) => e)) as NodeConfigurationError;
    expect(err).toBeInstanceOf(NodeConfigurationError);
    expect(err.errors[0]!.problem).toMatch(/may not run (EVALSHA|EVAL)/);
  });
});
