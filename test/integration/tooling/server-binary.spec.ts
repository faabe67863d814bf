/**
 * The launchers of `nest-quorum-lock/testing` run the server binary they are given
 * (`serverBinary`, else REDIS_SERVER_BIN, else redis-server on PATH), and the version probe says
 * what a binary is. A copy of the installed server under another path tells which binary a
 * process runs (/proc/<pid>/exe), so the checks need Linux.
 */
import { copyFileSync, mkdtempSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import {
  REDIS_SERVER_BIN,
  RedisClusterNodes,
  RedisNodes,
  SentinelGroup,
  redisServerVersion,
} from '../../../lib/testing/index.js';

const linux = process.platform === 'linux' ? describe : describe.skip;

/** The file a process runs. */
const exeOf = (pid: number | undefined) => readlinkSync(`/proc/${pid}/exe`);

linux('server binary of the launchers', () => {
  let dir: string;
  let copy: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'server-binary-'));
    const installed = spawnSync('sh', ['-c', `command -v ${redisServerVersion().binary}`], {
      encoding: 'utf8',
    });
    copy = join(dir, 'redis-server');
    copyFileSync(realpathSync(installed.stdout.trim()), copy);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('the version probe names the server and its version, and refuses what is not one', () => {
    const probed = redisServerVersion(copy);
    expect(probed).toEqual({
      binary: copy,
      name: redisServerVersion().name,
      version: redisServerVersion().version,
    });
    expect(probed.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(() => redisServerVersion('/bin/true')).toThrow(/not a Redis or Valkey server/);
    expect(() => redisServerVersion(join(dir, 'valkey-server'))).toThrow(
      new RegExp(`${dir}/valkey-server could not be run.*${REDIS_SERVER_BIN}`, 's'),
    );
  });

  test('RedisNodes runs serverBinary, and REDIS_SERVER_BIN when the option is not given', async () => {
    const given = await RedisNodes.start(1, { serverBinary: copy });
    try {
      expect(exeOf(given.pid(0))).toBe(copy);
      expect(given.server.binary).toBe(copy);
      await given.restart(0); // a restart runs it again
      expect(exeOf(given.pid(0))).toBe(copy);
    } finally {
      await given.close();
    }
    const before = process.env[REDIS_SERVER_BIN];
    process.env[REDIS_SERVER_BIN] = copy;
    try {
      const fromEnv = await RedisNodes.start(1);
      try {
        expect(exeOf(fromEnv.pid(0))).toBe(copy);
      } finally {
        await fromEnv.close();
      }
    } finally {
      if (before === undefined) delete process.env[REDIS_SERVER_BIN];
      else process.env[REDIS_SERVER_BIN] = before;
    }
    await expect(RedisNodes.start(1, { serverBinary: '/bin/true' })).rejects.toThrow(TypeError);
  });

  test('the Cluster and Sentinel launchers run it for every process', async () => {
    const cluster = await RedisClusterNodes.start(3, { serverBinary: copy });
    try {
      expect([0, 1, 2].map((i) => exeOf(cluster.nodes.pid(i)))).toEqual([copy, copy, copy]);
    } finally {
      await cluster.close();
    }
    const group = await SentinelGroup.start({ serverBinary: copy });
    try {
      expect(group.servers.map((s) => exeOf(s.pid(0)))).toEqual([copy, copy]);
      // The Sentinel process: INFO server's `executable` is the file it was started as.
      const info = String(await group.sentinel(0).info('server'));
      expect(/^executable:(.*)$/m.exec(info)?.[1]?.trim()).toBe(copy);
    } finally {
      await group.close();
    }
  });
});
