/**
 * The application the consumer suite (test/consumers/run.mjs) copies into every generated app, as
 * `src/main.ts`, and compiles there with that app's TypeScript, tsconfig and installed packages.
 * The same source must therefore compile as CommonJS (`module: commonjs` or `nodenext` without
 * `"type": "module"`) and as ESM: no `import.meta`, no top-level await, `.js`-free imports of
 * packages only.
 *
 * Run as `node dist/main.js`, it starts 3 real redis-server nodes through the package's own
 * `nest-quorum-lock/testing` (which proves that entry point loads under the app's module system),
 * boots a NestJS HTTP app with a `@DistributedLock` route against them, checks what a user relies
 * on, closes everything and prints one `RESULT {json}` line. The runner treats a process that does
 * not exit by itself shortly after that line as a failure (a handle left open).
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Controller, Get, Module, Param, Query, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  DistributedLock,
  FencingToken,
  LockService,
  RedlockModule,
  type RedlockNode,
} from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';
// The app's client (run.mjs copies one of app/clients-*.ts here): ioredis, node-redis or GLIDE.
import { connectClients } from './clients.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long the waiting route may wait; far below the 10 s lease, so only a wake-up can serve it. */
const WAIT_MS = 5000;

@Controller('jobs')
class JobsController {
  /** Fails fast on a busy lock (409); `holdMs` keeps the lock that long. */
  @Get(':id')
  @DistributedLock('job:{0}', { wait: 0 })
  async run(
    @Param('id') id: string,
    @Query('holdMs') holdMs: string | undefined,
    @FencingToken() token: number,
  ): Promise<{ id: string; token: number }> {
    if (holdMs) await sleep(Number(holdMs));
    return { id, token };
  }

  /** Waits in line for a busy lock. */
  @Get(':id/waiting')
  @DistributedLock('job:{0}', { wait: WAIT_MS })
  async runWaiting(
    @Param('id') id: string,
    @FencingToken() token: number,
  ): Promise<{ id: string; token: number }> {
    return { id, token };
  }
}

@Module({ controllers: [JobsController] })
class AppModule {
  static forNodes(nodes: RedlockNode[]): DynamicModule {
    // The restart guard on, as in production: RedisNodes recorded its nodes fresh (for their run_id).
    return {
      module: AppModule,
      imports: [RedlockModule.forRoot({ nodes, ttl: 10_000 })],
    };
  }
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

interface Reply {
  status: number;
  token: number | undefined;
  retryAfter: string | null;
}

async function get(url: string): Promise<Reply> {
  const res = await fetch(url);
  const text = await res.text();
  let token: number | undefined;
  try {
    const body = JSON.parse(text) as { token?: unknown };
    token = typeof body.token === 'number' ? body.token : undefined;
  } catch {
    token = undefined;
  }
  return { status: res.status, token, retryAfter: res.headers.get('retry-after') };
}

const increasing = (tokens: Array<number | undefined>) =>
  tokens.every((t, i) => typeof t === 'number' && (i === 0 || t > (tokens[i - 1] as number)));

async function main(): Promise<void> {
  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const nodes = await RedisNodes.start(3);
  let protocol: string | undefined;
  const clients = await connectClients(nodes.urls);
  try {
    const app = await NestFactory.create(AppModule.forNodes(clients.nodes), { logger: ['error', 'warn'] });
    try {
      await app.listen(0, '127.0.0.1');
      const base = `${await app.getUrl()}/jobs`;

      // 1. Several calls in a row: 2xx, with strictly increasing fencing tokens.
      const seq: Reply[] = [];
      for (let i = 0; i < 5; i++) seq.push(await get(`${base}/1`));
      const tokens = seq.map((r) => r.token);
      check(
        'sequential calls: 200 with strictly increasing tokens',
        seq.every((r) => r.status === 200) && increasing(tokens),
        `statuses ${seq.map((r) => r.status).join(',')}, tokens ${tokens.join(',')}`,
      );

      // 2. Held by someone else (the test side, through the app's own LockService): 409 at once.
      const locks = app.get(LockService);
      const held = await locks.acquire('job:1');
      const busy = await get(`${base}/1`);
      await held.release();
      const after = await get(`${base}/1`);
      check(
        'busy lock: 409 with Retry-After, then 200 after release',
        busy.status === 409 &&
          busy.retryAfter !== null &&
          after.status === 200 &&
          increasing([tokens[tokens.length - 1], held.fencingToken, after.token]),
        `busy ${busy.status} (Retry-After ${busy.retryAfter}), after release ${after.status}; ` +
          `tokens ${tokens[tokens.length - 1]} < held ${held.fencingToken} < ${after.token}`,
      );

      // 3. A waiting acquire: a second request waits while the first holds, and gets the lock when
      // the first releases. With a 10 s lease and a 5 s wait only the release's wake-up (pub/sub)
      // or hand-off can serve it in time; a broken wake-up answers 409.
      const holdMs = 600;
      const firstSent = performance.now();
      const first = get(`${base}/2?holdMs=${holdMs}`).then((r) => ({ ...r, at: performance.now() }));
      await sleep(200);
      const second = get(`${base}/2/waiting`).then((r) => ({ ...r, at: performance.now() }));
      const [r1, r2] = await Promise.all([first, second]);
      const lag = r2.at - r1.at;
      check(
        'waiting acquire: served right after the holder releases',
        r1.status === 200 &&
          r2.status === 200 &&
          increasing([r1.token, r2.token]) &&
          r2.at - firstSent >= holdMs &&
          lag < 1000,
        `holder ${r1.status} token ${r1.token}, waiter ${r2.status} token ${r2.token}, ` +
          `waiter answered ${lag.toFixed(0)} ms after the holder`,
      );

      // 4. A release waits for its replies with every client (no one-way writes, no CLIENT REPLY):
      // 20 locked calls in a row, all served in order, and no CLIENT REPLY sent to the server.
      const skips = async () =>
        Number(
          /^cmdstat_client\|reply:calls=(\d+)/m.exec(await clients.command(0, 'INFO', 'commandstats'))?.[1] ??
            0,
        );
      const skipsBefore = await skips();
      const burst: Reply[] = [];
      for (let i = 0; i < 20; i++) burst.push(await get(`${base}/3`));
      const skipped = (await skips()) - skipsBefore;
      check(
        `${clients.name}: 20 locked calls in a row, tokens in order`,
        skipped === 0 && burst.every((r) => r.status === 200) && increasing(burst.map((r) => r.token)),
        `${skipped} CLIENT REPLY calls on node 0 for 20 locked calls, statuses ${[...new Set(burst.map((r) => r.status))].join(',')}`,
      );

      // Which protocol the library's connections speak (ioredis 6 and node-redis 6 default to RESP3).
      const list = await clients.command(0, 'CLIENT', 'LIST');
      const conns = list
        .split('\n')
        .filter((line) => line.includes('cmd=') && !line.includes('cmd=client|list'));
      const resp = (line: string) => /\bresp=(\d)/.exec(line)?.[1] ?? '?';
      const pubsub = conns.filter((line) => /\bflags=\S*P/.test(line));
      protocol =
        `${clients.name}: RESP${[...new Set(conns.map(resp))].join('/')} on ${conns.length} connection(s) of node 0, ` +
        `pub/sub ${pubsub.map((line) => `RESP${resp(line)}`).join(',') || 'none'}`;
    } finally {
      await app.close();
    }
    // 5. The package's bin, as npm installed it: `nest-quorum-lock fresh-node` records an empty node
    // (started unrecorded) and refuses node 0, which now holds the app's keys.
    const spare = await RedisNodes.start(1, { freshFor: [] });
    try {
      const bin = join(process.cwd(), 'node_modules', '.bin', 'nest-quorum-lock');
      const cli = (url: string) => spawnSync(bin, ['fresh-node', url], { encoding: 'utf8', timeout: 30_000 });
      const fresh = cli(spare.url(0));
      const used = cli(nodes.url(0));
      check(
        'npx nest-quorum-lock fresh-node: records an empty node, refuses one with data',
        fresh.status === 0 &&
          fresh.stdout.includes('recorded as fresh') &&
          used.status === 1 &&
          used.stderr.includes('it is not empty'),
        `empty node: exit ${fresh.status} ${(fresh.stdout + fresh.stderr).trim().slice(0, 160)}; ` +
          `node with data: exit ${used.status} ${used.stderr.trim().slice(0, 160)}`,
      );
    } finally {
      await spare.close();
    }
  } finally {
    await clients.close();
    await nodes.close();
  }
  const ok = checks.length === 5 && checks.every((c) => c.ok);
  process.stdout.write(`RESULT ${JSON.stringify({ ok, checks, protocol })}\n`);
}

// The runner stops a hung app with SIGTERM: exit through process.exit so that RedisNodes' exit hook
// ends the redis-server processes it started (a signal's default action would skip the hook).
process.once('SIGTERM', () => process.exit(143));

main().catch((err: unknown) => {
  process.stdout.write(
    `RESULT ${JSON.stringify({ ok: false, checks: [], protocol: '', error: String((err as Error)?.stack ?? err) })}\n`,
  );
  process.exitCode = 1;
});
