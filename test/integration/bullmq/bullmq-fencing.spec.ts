/**
 * A BullMQ job under @DistributedLock, its result fenced (issue 38, item 7; the recipe is
 * docs/examples/bullmq.ts). Real BullMQ workers (@nestjs/bullmq, two processes) on a real Redis,
 * lock nodes and PostgreSQL started here. BullMQ's lockDuration and stalledInterval and the lock's
 * ttl are all 1 s (the recipe's 30 s, shortened). Worker A takes the job, reads its row (token tA),
 * and is paused (SIGSTOP) past both leases; BullMQ's stalled-job check hands the job to worker B,
 * which acquires the lock (token tB > tA), pays and completes the job. Then A resumes: its write is
 * refused by the fenced table, its signal aborts with LockLostError, and the job stays completed
 * once, with tB.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue, QueueEvents } from 'bullmq';
import pg from 'pg';
import ts from 'typescript';
import { PostgresServer, RedisNodes } from 'nest-quorum-lock/testing';
import { payouts } from '../../../docs/examples/bullmq.js';
import { closeAfterSessions } from '../../support/postgres-sessions.js';

const root = join(import.meta.dirname, '..', '..', '..');
const out = join(root, 'test', '.generated', 'bullmq');
const LEASE_MS = 1000;

/** A message a worker sent over IPC. */
type Message = { role: 'A' | 'B'; type: string; [key: string]: unknown };

/**
 * The recipe and the worker transpiled to ES modules (decorators and their metadata, as tsc emits
 * them), importing the built library (dist/), with the recipe's lease shortened to LEASE_MS.
 */
function transpileWorker(): string {
  const dist = (path: string) => pathToFileURL(join(root, 'dist', path)).href;
  const emit = (file: string, target: string, edit: (code: string) => string) => {
    const { outputText } = ts.transpileModule(readFileSync(join(root, file), 'utf8'), {
      compilerOptions: {
        module: ts.ModuleKind.ES2022,
        target: ts.ScriptTarget.ES2022,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
      },
    });
    const code = edit(outputText)
      .replace(/from 'nest-quorum-lock'/g, `from '${dist('index.js')}'`)
      .replace(/from 'nest-quorum-lock\/sql'/g, `from '${dist('fencing/sql/index.js')}'`);
    writeFileSync(join(out, target), code);
  };
  mkdirSync(out, { recursive: true });
  emit('docs/examples/bullmq.ts', 'bullmq.mjs', (code) => {
    const shortened = code.replace('PAYOUT_LEASE_MS = 30_000', `PAYOUT_LEASE_MS = ${LEASE_MS}`);
    if (shortened === code)
      throw new Error('docs/examples/bullmq.ts no longer declares PAYOUT_LEASE_MS = 30_000');
    return shortened;
  });
  emit('test/integration/bullmq/payout-worker.ts', 'payout-worker.mjs', (code) =>
    code.replace("'../../../docs/examples/bullmq.js'", "'./bullmq.mjs'"),
  );
  return join(out, 'payout-worker.mjs');
}

let database: PostgresServer;
let pool: pg.Pool;
let lockNodes: RedisNodes;
let queueNode: RedisNodes;
let queue: Queue;
let events: QueueEvents;
const workers: ChildProcess[] = [];
const messages: Message[] = [];

/** Resolves the first message (already received or to come) that `match` accepts. */
function message(match: (m: Message) => boolean, timeoutMs = 20_000): Promise<Message> {
  const found = messages.find(match);
  if (found) return Promise.resolve(found);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no such message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`)),
      timeoutMs,
    );
    const check = () => {
      const m = messages.find(match);
      if (!m) return;
      clearTimeout(timer);
      for (const w of workers) w.off('message', check);
      resolve(m);
    };
    for (const w of workers) w.on('message', check);
  });
}

function startWorker(script: string, role: 'A' | 'B'): ChildProcess {
  const child = fork(script, [], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      PAYOUT_WORKER: JSON.stringify({
        role,
        lockNodes: lockNodes.urls,
        queue: { host: '127.0.0.1', port: queueNode.port(0) },
        database: database.url,
      }),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  child.on('message', (m: Message) => messages.push(m));
  workers.push(child);
  return child;
}

beforeAll(async () => {
  database = await PostgresServer.start();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  await payouts.ensureTable(pool, { columns: { status: 'text', reference: 'text' } });
  lockNodes = await RedisNodes.start(3);
  queueNode = await RedisNodes.start(1);
  const connection = { host: '127.0.0.1', port: queueNode.port(0) };
  queue = new Queue('payouts', { connection });
  events = new QueueEvents('payouts', { connection });
  await events.waitUntilReady();
}, 60_000);

afterAll(async () => {
  for (const w of workers) {
    if (w.exitCode !== null || w.signalCode !== null) continue;
    const exited = new Promise((resolve) => w.once('exit', resolve));
    w.kill('SIGCONT');
    w.send({ type: 'exit' });
    const timer = setTimeout(() => w.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await events?.close();
  await queue?.close();
  await pool?.end();
  // pool.end() does not wait for its connections to close
  await Promise.all([lockNodes?.close(), queueNode?.close(), closeAfterSessions(database)]);
});

test('a worker paused past the leases: its run aborts with LockLostError, its write is refused, the job completes once with the successor', async () => {
  const script = transpileWorker();
  let completions = 0;
  events.on('completed', () => completions++);

  const a = startWorker(script, 'A');
  await message((m) => m.role === 'A' && m.type === 'ready');
  const job = await queue.add('pay', { account: 'alice', amount: 5 }, { jobId: 'payout-1' });
  await message((m) => m.role === 'A' && m.type === 'transfer');
  // A has read the row (recording its token) and stops itself right after its transfer.
  const tokenA = Number(
    (await pool.query(`SELECT fence_token FROM payouts WHERE id = 'payout-1'`)).rows[0].fence_token,
  );
  expect(tokenA).toBeGreaterThan(0);

  startWorker(script, 'B');
  await message((m) => m.role === 'B' && m.type === 'transfer');
  const result = (await job.waitUntilFinished(events, 20_000)) as { reference: string; token: number };
  expect(result.reference).toBe('ref-B');
  expect(result.token).toBeGreaterThan(tokenA);

  a.kill('SIGCONT'); // A resumes where it stopped: it goes on to write its result
  const refused = await message((m) => m.role === 'A' && m.type === 'warn');
  expect(refused.message).toBe(`payout payout-1: write refused, token ${result.token} holds the row`);
  const aborted = await message((m) => m.role === 'A' && m.type === 'aborted');
  expect(aborted.reason).toBe('LockLostError');

  // The row is B's: 0 stale writes accepted.
  const { rows } = await pool.query(
    `SELECT status, reference, fence_token FROM payouts WHERE id = 'payout-1'`,
  );
  expect(rows).toEqual([{ status: 'paid', reference: 'ref-B', fence_token: String(result.token) }]);
  // Completed once, with B's result: A's run could not move the job (its BullMQ lock is gone).
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(completions).toBe(1);
  expect(await job.getState()).toBe('completed');
  expect((await queue.getJob('payout-1'))?.returnvalue).toEqual(result);
  // B's signal aborts only when B releases the lock (an AbortError), never for a loss.
  expect(messages.filter((m) => m.role === 'B' && m.reason === 'LockLostError')).toEqual([]);
}, 60_000);
