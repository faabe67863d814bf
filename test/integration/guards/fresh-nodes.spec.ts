import 'reflect-metadata';
import { lockedTestExample } from '../../../docs/examples/testing.js';
import { freshNodeCommand } from '../../../lib/cli/fresh-node.js';
import { NodeNotFreshError, QuorumUnavailableError, Redlock } from '../../../lib/index.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { MemoryLogger } from '../../support/cluster.js';

/*
 * Fresh nodes vote at once with the restart guard on (its default, 60 s), through the guard's own
 * record bound to the server's run_id (lib/core/guards/fresh-node.ts): nodes RedisNodes starts,
 * and nodes the `fresh-node` command records. The same node restarted is another server and
 * abstains. Every engine here runs with the default restartGuard: an abstaining node shows as
 * `abstainingUntil` in status() right after connect().
 */

const engines: Redlock[] = [];
const sets: RedisNodes[] = [];

afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all(sets.splice(0).map((s) => s.close()));
});

async function start(count: number, options?: Parameters<typeof RedisNodes.start>[1]): Promise<RedisNodes> {
  const nodes = await RedisNodes.start(count, options);
  sets.push(nodes);
  return nodes;
}

/** Which of `urls` abstain under the restart guard for a new engine (default options but the logger). */
async function abstaining(
  urls: string[],
  keyPrefix?: string,
  logger = new MemoryLogger(),
): Promise<boolean[]> {
  const engine = new Redlock({
    nodes: urls,
    logger,
    ...(keyPrefix ? { keyPrefix } : {}),
  });
  engines.push(engine);
  await engine.connect();
  return engine.status().map((s) => s.abstainingUntil !== undefined && s.abstainingUntil > Date.now());
}

/** Runs the command; its exit code and what it wrote. */
async function command(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await freshNodeCommand(args, { log: (l) => out.push(l), error: (l) => err.push(l) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('fresh nodes and the restart guard', () => {
  it('nodes RedisNodes starts vote at once, and a lock is granted at once', async () => {
    const nodes = await start(3);
    expect(await abstaining(nodes.urls)).toEqual([false, false, false]);
    const lock = await engines[0]!.acquire('fresh', { wait: 0 });
    await lock.release();
  });

  it("docs/testing.md's example: an app on RedisNodes locks at once, the restart guard on", async () => {
    await lockedTestExample(); // rejects with QuorumUnavailableError while the nodes abstain
  });

  it('a RedisNodes node restarted (no persistence) abstains: the proof was for the server before', async () => {
    const nodes = await start(3);
    await nodes.restart(0);
    expect(await abstaining(nodes.urls)).toEqual([true, false, false]);
  });

  it('a restarted node is told why waiting is safe; the command is named for new nodes only', async () => {
    const nodes = await start(1);
    await nodes.restart(0);
    const logger = new MemoryLogger();
    expect(await abstaining(nodes.urls, undefined, logger)).toEqual([true]);
    const refused = await engines[0]!.acquire('r', { wait: 0 }).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(QuorumUnavailableError);
    expect((refused as Error).message).toMatch(
      /abstaining under the restart guard .* Waiting keeps locks safe: a node abstains when it may have lost locks it granted .* Nodes created just now and still empty .*`npx nest-quorum-lock fresh-node <url>`/,
    );
    await engines[0]!.close(); // logs the pending abstention line
    const line = logger.lines.find((l) => l.includes('abstains from lock quorums'));
    expect(line).toMatch(
      /Waiting is the safe choice: a node that restarted empty looks exactly like a new one/,
    );
    expect(line).toMatch(
      /Only for nodes created just now and still empty .*`npx nest-quorum-lock fresh-node <url>`/,
    );
    expect(line).not.toContain('restartGuard: false');
  });

  it('a node restarted with its data (appendfsync everysec) abstains too: another run_id', async () => {
    const nodes = await start(1, { persistence: 'aof-everysec' });
    await nodes.restart(0);
    expect(await abstaining(nodes.urls)).toEqual([true]);
  });

  it('freshFor names the prefixes recorded; other prefixes abstain as on any new node', async () => {
    const nodes = await start(1, { freshFor: ['app-a:'] });
    expect(await abstaining(nodes.urls, 'app-a:')).toEqual([false]);
    expect(await abstaining(nodes.urls)).toEqual([true]);
  });

  it('fresh-node records empty nodes an operator started: they vote at once', async () => {
    const nodes = await start(2, { freshFor: [] });
    const run = await command(...nodes.urls);
    expect(run).toMatchObject({ code: 0, err: '' });
    expect(run.out).toContain('recorded as fresh for key prefix "redlock:"');
    expect(await abstaining(nodes.urls)).toEqual([false, false]);
    await nodes.restart(1);
    expect(await abstaining(nodes.urls)).toEqual([false, true]);
  });

  it("fresh-node accepts a node that only holds the guard's own keys (an app booted on it first)", async () => {
    const nodes = await start(1, { freshFor: [] });
    expect(await abstaining(nodes.urls)).toEqual([true]); // writes the marker and identity record
    expect(await command(nodes.url(0))).toMatchObject({ code: 0 });
    expect(await abstaining(nodes.urls)).toEqual([false]);
  });

  it('fresh-node refuses a node that holds data, says why, and writes nothing', async () => {
    const nodes = await start(1, { freshFor: [] });
    await nodes.client(0).set('orders:1', 'paid');
    const run = await command(nodes.url(0), '--key-prefix', 'app:');
    expect(run.code).toBe(1);
    expect(run.err).toMatch(
      /was not marked fresh: it is not empty \(1 key other than the restart guard's own, e\.g\. "orders:1"\)/,
    );
    expect(run.err).toContain('waits out restartGuard');
    expect(await nodes.client(0).keys('*')).toEqual(['orders:1']);
    expect(await abstaining(nodes.urls, 'app:')).toEqual([true]);
  });

  it('fresh-node refuses bad arguments and a node that is down, naming them', async () => {
    expect(await command()).toMatchObject({
      code: 2,
      err: expect.stringContaining('Name at least one node'),
    });
    expect(await command('localhost:6379')).toMatchObject({
      code: 2,
      err: expect.stringContaining('Not a redis://'),
    });
    const nodes = await start(1, { freshFor: [] });
    const url = nodes.url(0);
    await nodes.kill(0);
    const run = await command(url);
    expect(run.code).toBe(1);
    expect(run.err).toContain(`cannot connect to ${url}`);
  });

  it('markFreshNode refuses a replica with a typed error', async () => {
    const nodes = await start(2, { freshFor: [] });
    await nodes.client(1).call('REPLICAOF', '127.0.0.1', String(nodes.port(0)));
    const send = ([c, ...a]: readonly string[]) => nodes.client(1).call(c!, ...a);
    const { markFreshNode } = await import('../../../lib/index.js');
    await expect(markFreshNode(send)).rejects.toThrow(NodeNotFreshError);
    await expect(markFreshNode(send)).rejects.toThrow(
      /it is a replica of 127\.0\.0\.1:\d+: mark its primary/,
    );
  });
});
