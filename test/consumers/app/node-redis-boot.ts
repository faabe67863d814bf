/**
 * The node-redis boot check (issue 40, item 2), which run.mjs copies into its node-redis apps as
 * `src/node-redis-boot.ts`, beside docs/examples/node-redis-module.ts as `src/locks.module.ts`:
 * the module exactly as docs/clients.md shows it, with a node-redis client passed in unconnected.
 *
 * Run as `node dist/node-redis-boot.js <down | wrong-password>`, it starts 3 real redis-server
 * nodes through the package's `nest-quorum-lock/testing`, makes node A (the client passed in) a
 * node that is down, or one that refuses the password the client sends, boots a NestJS HTTP app on
 * the docs module, and checks that the app listens (within 2.5 s), serves a locked route on the
 * two other nodes, and closes. It prints one `RESULT {json}` line; the runner fails a process that does not exit
 * by itself shortly after it (the client the library connected must be closed by the library).
 * With the recipe the docs showed before (`await client.connect()` before the bootstrap) the app
 * never listens: node-redis' connect() does not settle in either case.
 */
import 'reflect-metadata';
import { Controller, Get, Module, Param } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DistributedLock, FencingToken } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';

/**
 * The longest the app may take to listen: half the module's connectTimeout (5 s). The bootstrap
 * starts on the two other nodes, a quorum, without waiting out connectTimeout for node A (issue
 * 40, item 5: it waited 5 s while A was down).
 */
const LISTEN_WITHIN_MS = 2500;
const PASSWORD = 'right';

@Controller('orders')
class OrdersController {
  @Get(':id/pay')
  @DistributedLock('order:{0}')
  async pay(@Param('id') id: string, @FencingToken() token: number): Promise<{ id: string; token: number }> {
    return { id, token };
  }
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

async function main(): Promise<void> {
  const scenario = process.argv[2];
  if (scenario !== 'down' && scenario !== 'wrong-password') throw new Error(`unknown scenario ${scenario}`);
  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const nodes = await RedisNodes.start(3, scenario === 'wrong-password' ? { password: PASSWORD } : {});
  let listenMs: number | undefined;
  try {
    // RedisNodes recorded the nodes fresh (for their run_id): the docs module (guard on, as in
    // production) votes at once.
    const [a, b, c] = nodes.urls as [string, string, string];
    if (scenario === 'down') {
      await nodes.kill(0); // nothing listens on its port: node-redis retries for ever
      process.env.LOCKS_A_URL = a;
    } else {
      process.env.LOCKS_A_URL = a.replace(`:${PASSWORD}@`, ':wrong@');
    }
    process.env.LOCKS_B_URL = b;
    const third = new URL(c);
    process.env.LOCKS_C_URL = `redis://${third.host}`;
    if (scenario === 'wrong-password') process.env.LOCKS_C_PW = PASSWORD;
    // Loaded now: the docs module reads the environment when it is imported, as an app's would.
    const { LocksModule } = await import('./locks.module.js');

    @Module({ imports: [LocksModule], controllers: [OrdersController] })
    class AppModule {}

    const started = performance.now();
    const app = await NestFactory.create(AppModule, { logger: ['error'] });
    try {
      await app.listen(0, '127.0.0.1');
      listenMs = performance.now() - started;
      check(
        `node A ${scenario === 'down' ? 'down' : 'refusing the password'}: the app listens`,
        listenMs < LISTEN_WITHIN_MS,
        `listening after ${(listenMs / 1000).toFixed(1)} s`,
      );
      const base = `${await app.getUrl()}/orders`;
      const replies: Array<{ status: number; body: { token?: number } }> = [];
      for (const id of ['1', '2', '1']) {
        const res = await fetch(`${base}/${id}/pay`);
        replies.push({ status: res.status, body: (await res.json()) as { token?: number } });
      }
      const tokens = replies.map((r) => r.body.token);
      check(
        'locked route served by the other two nodes',
        replies.every((r) => r.status === 200) &&
          tokens.every((t) => typeof t === 'number') &&
          tokens[2]! > tokens[0]!,
        `statuses ${replies.map((r) => r.status).join(',')}, tokens ${tokens.join(',')}`,
      );
    } finally {
      await app.close();
    }
  } finally {
    await nodes.close();
  }
  const ok = checks.length === 2 && checks.every((c) => c.ok);
  process.stdout.write(`RESULT ${JSON.stringify({ ok, checks, listenMs })}\n`);
}

// The runner stops a hung app with SIGTERM: exit through process.exit so that RedisNodes' exit hook
// ends the redis-server processes it started (a signal's default action would skip the hook).
process.once('SIGTERM', () => process.exit(143));

main().catch((err: unknown) => {
  process.stdout.write(
    `RESULT ${JSON.stringify({ ok: false, checks: [], error: String((err as Error)?.stack ?? err) })}\n`,
  );
  process.exitCode = 1;
});
