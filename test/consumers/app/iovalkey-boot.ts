/**
 * The iovalkey check, which run.mjs copies as `src/iovalkey-boot.ts` into the app on node-redis 6
 * (an app without ioredis) that also installs iovalkey: iovalkey clients (the ioredis fork for
 * Valkey) passed in as the nodes, compiled with the app (`skipLibCheck: false`: the package's typings
 * take them without ioredis' typings), working without ioredis installed.
 *
 * Run as `node dist/iovalkey-boot.js`, it starts 3 real redis-server nodes through the package's
 * `nest-quorum-lock/testing`, takes a lock, sees it busy, has a waiter woken by the release (pub/sub
 * over the library's duplicate of each client), closes the engine and then the clients, and prints
 * one `RESULT {json}` line; the runner fails a process that does not exit by itself shortly after.
 */
import { Valkey } from 'iovalkey';
import { LockNotAcquiredError, Redlock } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function main(): Promise<void> {
  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => checks.push({ name, ok, detail });
  const nodes = await RedisNodes.start(3);
  const clients = nodes.urls.map((url) => new Valkey(url));
  try {
    // Nodes this process just started cannot have granted anything: no restart guard needed.
    const engine = new Redlock({ nodes: clients, restartGuard: false, ttl: 10_000 });
    try {
      const statuses = await engine.connect();
      const held = await engine.acquire('iovalkey:1');
      const busy = await engine.acquire('iovalkey:1').then(
        (lock) => lock,
        (err: unknown) => err,
      );
      check(
        'iovalkey clients as nodes: a grant, then busy',
        statuses.every((s) => s.reachable) && busy instanceof LockNotAcquiredError,
        `${statuses.filter((s) => s.reachable).length} of 3 reachable, token ${held.fencingToken}, ` +
          `second acquire: ${busy instanceof Error ? busy.name : 'granted'}`,
      );
      // A 10 s lease and a 5 s wait: only the release's wake-up can serve the waiter in time.
      const waiting = engine.acquire('iovalkey:1', { wait: 5000 });
      await sleep(200);
      const releasedAt = performance.now();
      await held.release();
      const next = await waiting;
      const lag = performance.now() - releasedAt;
      const unsubscribed = engine.status().filter((s) => s.subscriptionError !== undefined);
      check(
        'a waiter is woken by the release',
        next.fencingToken > held.fencingToken && lag < 1000 && unsubscribed.length === 0,
        `token ${held.fencingToken} then ${next.fencingToken}, ${lag.toFixed(0)} ms after the release; ` +
          `wake-ups not subscribed on ${unsubscribed.length} node(s)`,
      );
      await next.release();
    } finally {
      await engine.close();
    }
  } finally {
    await Promise.all(clients.map((client) => client.quit()));
    await nodes.close();
  }
  const ok = checks.length === 2 && checks.every((c) => c.ok);
  process.stdout.write(`RESULT ${JSON.stringify({ ok, checks })}\n`);
}

// The runner stops a hung app with SIGTERM: exit through process.exit so that RedisNodes' exit hook
// ends the redis-server processes it started.
process.once('SIGTERM', () => process.exit(143));

main().catch((err: unknown) => {
  process.stdout.write(
    `RESULT ${JSON.stringify({ ok: false, checks: [], error: String((err as Error)?.stack ?? err) })}\n`,
  );
  process.exitCode = 1;
});
