import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { freePort, PostgresServer, RedisNodes } from 'nest-quorum-lock/testing';

/**
 * `npm run demo`: three instances of the sample app against the same five lock nodes and the
 * same accounts database (a PostgreSQL started here; `STORE=redis npm run demo` for a Redis one);
 * a few hundred concurrent withdrawals; one instance is paused (SIGSTOP) while it holds an
 * account lock until the lock expires, then resumed: the database refuses its stale write.
 * Prints what happened and ends every process it started; with `--keep` (`npm run demo -- --keep`)
 * it leaves them running after the table, so that the live dashboards can be looked at, until Ctrl-C.
 */
const ACCOUNTS = ['alice', 'bob', 'carol', 'dave'];
const OPENING_BALANCE = 5_000;
const REQUESTS = 300;
const TTL_MS = 2000; // the sample app's lock ttl
const KEEP = process.argv.includes('--keep');

interface Instance {
  readonly name: string;
  readonly port: number;
  readonly proc: ChildProcess;
}

interface Outcome {
  readonly status: number;
  readonly account: string;
  readonly amount: number;
  readonly body: { balance?: number; token?: number };
}

const here = dirname(fileURLToPath(import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const proc = spawn(process.execPath, [join(here, 'main.js')], {
    env: { PAYMENT_DELAY_MS: '15', ...process.env, ...env, PORT: String(port), INSTANCE: name },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`http://localhost:${port}/status`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { name, port, proc };
    await sleep(100);
  }
  throw new Error(`instance ${name} did not start`);
}

async function withdraw(instance: Instance, account: string, amount: number): Promise<Outcome> {
  const res = await fetch(`http://localhost:${instance.port}/accounts/${account}/withdraw`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ amount }),
  });
  return { status: res.status, account, amount, body: (await res.json()) as Outcome['body'] };
}

async function open(instance: Instance, id: string, balance: number): Promise<void> {
  const res = await fetch(`http://localhost:${instance.port}/accounts/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ balance }),
  });
  if (!res.ok) throw new Error(`opening ${id} failed: HTTP ${res.status}`);
}

async function account(instance: Instance, id: string): Promise<{ balance: number }> {
  return (await (await fetch(`http://localhost:${instance.port}/accounts/${id}`)).json()) as {
    balance: number;
  };
}

/** The accounts' database the instances share. */
interface Store {
  readonly kind: 'postgres' | 'redis';
  readonly name: string;
  /** How an instance finds it (STORE + DATABASE_URL or STORE_URL). */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

/** The accounts' database for every instance: a local PostgreSQL (default) or redis-server. */
async function startStore(kind: 'postgres' | 'redis'): Promise<Store> {
  if (kind === 'postgres') {
    const server = await PostgresServer.start();
    return {
      kind,
      name: `PostgreSQL ${server.host}:${server.port} (FencedTable)`,
      env: { STORE: 'postgres', DATABASE_URL: server.url },
      close: () => server.close(),
    };
  }
  const nodes = await RedisNodes.start(1);
  return {
    kind,
    name: `redis-server ${nodes.url(0)} (FencedWriter)`,
    env: { STORE: 'redis', STORE_URL: nodes.url(0) },
    close: () => nodes.close(),
  };
}

async function main(): Promise<void> {
  const locks = await RedisNodes.start(5);
  const store = await startStore(process.env.STORE === 'redis' ? 'redis' : 'postgres').catch(async (err) => {
    await locks.close();
    throw err;
  });
  const instances: Instance[] = [];
  const stopAll = async () => {
    for (const i of instances) {
      if (i.proc.pid && i.proc.exitCode === null) {
        process.kill(i.proc.pid, 'SIGCONT');
        process.kill(i.proc.pid, 'SIGTERM');
      }
    }
    await Promise.all(
      instances.map((i) => (i.proc.exitCode === null ? new Promise((r) => i.proc.once('exit', r)) : null)),
    );
    await Promise.all([locks.close(), store.close()]);
  };
  process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));
  try {
    // The lock nodes are recorded fresh (RedisNodes): the instances vote at once, the restart guard on.
    const env = { REDLOCK_NODES: locks.urls.join(','), ...store.env };
    instances.push(await startInstance('A', env), await startInstance('B', env));
    // C's payment provider is slow, so it is sure to be caught mid-payment, holding the lock.
    instances.push(await startInstance('C', { ...env, PAYMENT_DELAY_MS: '300' }));
    console.log(
      `3 instances on ports ${instances.map((i) => i.port).join(', ')}; 5 lock nodes; accounts in ${store.name}`,
    );
    console.log(
      `Live dashboard: http://localhost:${instances[0]!.port}/dashboard (instance A; C's, the instance ` +
        `paused below, shows its stale write: http://localhost:${instances[2]!.port}/dashboard)` +
        (KEEP ? '' : `\n  add --keep to leave them up after the run: npm run demo -- --keep`),
    );
    for (const account of ACCOUNTS) await open(instances[0]!, account, OPENING_BALANCE);

    // The victim: instance C takes bob's lock for a withdrawal and is frozen mid-payment.
    const victim = instances[2]!;
    const frozen = withdraw(victim, 'bob', 1);
    const lockNode = locks.client(0);
    while ((await lockNode.exists('redlock:{account:bob}')) === 0) await sleep(1);
    await sleep(50); // the grant reached C and its 300 ms payment call is under way
    process.kill(victim.proc.pid!, 'SIGSTOP');
    console.log(`Paused instance ${victim.name} (SIGSTOP) while it holds the lock on bob`);

    const load: Array<Promise<Outcome>> = [];
    for (let i = 0; i < REQUESTS; i++) {
      const target = instances[i % 2]!; // A and B keep serving while C is frozen
      load.push(withdraw(target, ACCOUNTS[i % ACCOUNTS.length]!, 1 + (i % 50)));
    }
    await sleep(TTL_MS * 1.5);
    process.kill(victim.proc.pid!, 'SIGCONT');
    console.log(`Resumed instance ${victim.name} after ${TTL_MS * 1.5} ms (its lock had expired)`);
    const outcomes = [...(await Promise.all(load)), await frozen];

    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 409);
    const insufficient = outcomes.filter((o) => o.status === 422);
    const balances = await Promise.all(ACCOUNTS.map(async (a) => (await account(instances[0]!, a)).balance));
    const withdrawn = ok.reduce((sum, o) => sum + o.amount, 0);
    const expected = ACCOUNTS.length * OPENING_BALANCE - withdrawn;
    const final = balances.reduce((a, b) => a + b, 0);
    // Per account, successful withdrawals sorted by token must form one serial history.
    const serial = ACCOUNTS.every((account) => {
      const history = ok.filter((o) => o.account === account).sort((x, y) => x.body.token! - y.body.token!);
      let balance = OPENING_BALANCE;
      return history.every((o, i) => {
        balance -= o.amount;
        const increasing = i === 0 || o.body.token! > history[i - 1]!.body.token!;
        return increasing && o.body.balance === balance;
      });
    });
    const stats = await Promise.all(
      instances.map(
        async (i) =>
          (
            (await (await fetch(`http://localhost:${i.port}/status`)).json()) as {
              writes: { rejected: number };
            }
          ).writes,
      ),
    );
    const staleRejected = stats.reduce((sum, s) => sum + s.rejected, 0);

    const rows: Array<[string, string]> = [
      ['requests', String(outcomes.length)],
      ['granted (200)', String(ok.length)],
      ['refused, lock busy or stale (409)', String(refused.length)],
      ['insufficient funds (422)', String(insufficient.length)],
      ['final balance (all accounts)', String(final)],
      ['expected balance', String(expected)],
      ['balances match', final === expected && balances.every((b) => b >= 0) ? 'yes' : 'NO'],
      ['tokens strictly increasing per account', serial ? 'yes' : 'NO'],
      [
        `stale writes rejected by ${store.kind === 'postgres' ? 'PostgreSQL' : 'Redis'}`,
        String(staleRejected),
      ],
      [`paused instance's withdrawal`, `HTTP ${(await frozen).status}`],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    console.log('\n' + rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n') + '\n');
    process.exitCode = final === expected && serial && staleRejected > 0 ? 0 : 1;
    if (KEEP) {
      console.log('--keep: the instances and the dashboards stay up; Ctrl-C stops them.');
      await new Promise(() => undefined); // the SIGINT handler above stops everything and exits
    }
  } finally {
    await stopAll();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
