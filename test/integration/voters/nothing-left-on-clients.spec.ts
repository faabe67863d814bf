import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RedisClusterNodes, RedisNodes } from '../../../lib/testing/index.js';

/*
 * Nothing of the library survives close() on clients passed in (issue 36, item 6): per client kind,
 * a process of its own uses its clients as the lock nodes, closes the engine, then its clients,
 * and must exit by itself within the deadline; the clients carry as many listeners after close()
 * as before the engine was built (test/support/exits-after-close.mjs). The iovalkey processes
 * cannot load ioredis (nor node-redis), as an app that has iovalkey only.
 */

const script = fileURLToPath(new URL('../../support/exits-after-close.mjs', import.meta.url));
const DEADLINE_MS = 15_000;

interface Outcome {
  readonly exited: boolean;
  readonly report: { before: Record<string, number>; after: Record<string, number> } | undefined;
  readonly alive: unknown;
  readonly stderr: string;
}

function run(kind: string, urls: readonly string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, KIND: kind, NODE_URLS: urls.join(',') },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const lines = out
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('{')) // GLIDE's own log lines go to stdout too
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      resolve({
        exited: code === 0 && signal === null,
        report: lines.find((line) => 'before' in line) as Outcome['report'],
        alive: lines.find((line) => 'alive' in line)?.alive,
        stderr: err,
      });
    });
  });
}

describe('nothing left on clients passed in after close() (real nodes, one process per client kind)', () => {
  let nodes: RedisNodes;
  let cluster: RedisClusterNodes;

  beforeAll(async () => {
    [nodes, cluster] = await Promise.all([RedisNodes.start(3), RedisClusterNodes.start(3)]);
  });
  afterAll(async () => {
    await Promise.all([nodes?.close(), cluster?.close()]);
  });

  const clusterNodes = () => cluster.startupNodes.map(({ host, port }) => `${host}:${port}`);

  test.each([
    'ioredis',
    'iovalkey',
    'node-redis',
    'glide',
    'ioredis-cluster',
    'iovalkey-cluster',
    'node-redis-cluster',
    'glide-cluster',
  ])(
    '%s: the process exits by itself, and the client has the listeners it had',
    async (kind) => {
      const outcome = await run(kind, kind.endsWith('cluster') ? clusterNodes() : nodes.urls);
      expect({ kind, stderr: outcome.stderr, alive: outcome.alive, exited: outcome.exited }).toEqual({
        kind,
        stderr: '',
        alive: undefined,
        exited: true,
      });
      expect(outcome.report!.after).toEqual(outcome.report!.before);
    },
    DEADLINE_MS + 5000,
  );
});
