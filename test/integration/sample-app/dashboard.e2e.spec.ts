import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { FencedWriter, LockService, type Lock } from 'nest-quorum-lock';
import { RedisNodes } from 'nest-quorum-lock/testing';
import { AppModule } from '../../../sample-app/src/app.module.js';
import { readConfig } from '../../../sample-app/src/config.js';
import { HeadlessChromium, type BrowserPage } from './headless-chromium.js';

/** What the test reads off the page: the rendered text and the state attributes beside it. */
interface PageView {
  nodes: Array<{ node: string; state: string; text: string }>;
  accounts: Array<{ account: string; holder: string | null; token: string | null; text: string }>;
  activity: Array<{ kind: string; resource: string; text: string }>;
}

const READ_PAGE = `(() => {
  const all = (sel) => [...document.querySelectorAll(sel)];
  return {
    nodes: all('[data-node]').map((e) => ({ node: e.dataset.node, state: e.dataset.state, text: e.innerText })),
    accounts: all('[data-account]').map((e) => ({
      account: e.dataset.account, holder: e.dataset.holder ?? null, token: e.dataset.token ?? null, text: e.innerText,
    })),
    activity: all('[data-kind]').map((e) => ({ kind: e.dataset.kind, resource: e.dataset.resource, text: e.innerText })),
  };
})()`;

const INSTANCE = 'dash-test';
const STOPPED = 4; // the lock node SIGSTOPped for the whole test
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls the page until `done` holds or `timeoutMs` passes; returns the last view either way. */
async function waitForPage(
  page: BrowserPage,
  done: (v: PageView) => boolean,
  timeoutMs: number,
): Promise<PageView> {
  const deadline = Date.now() + timeoutMs;
  let view = await page.evaluate<PageView>(READ_PAGE);
  while (!done(view) && Date.now() < deadline) {
    await sleep(200);
    view = await page.evaluate<PageView>(READ_PAGE);
  }
  return view;
}

// Chromium is a Debian package that `npm test`'s pre-step installs where it can; without a Chromium
// that runs there is nothing to drive, and the test is skipped with the reason.
const chromium = HeadlessChromium.availability();
if (!chromium.ok)
  process.stderr.write(`\nskipping the dashboard test in headless Chromium: ${chromium.reason}\n`);
const withChromium = chromium.ok ? describe : describe.skip;

withChromium('sample app dashboard in headless Chromium (real lock nodes, one stopped)', () => {
  let locks: RedisNodes;
  let store: RedisNodes;
  let app: INestApplication;
  let browser: HeadlessChromium | undefined;
  let base: string;

  beforeAll(async () => {
    [locks, store] = await Promise.all([RedisNodes.start(5), RedisNodes.start(1)]);
    const config = {
      ...readConfig({ STORE: 'redis', STORE_URL: store.url(0) }),
      lockNodes: locks.urls,
      instance: INSTANCE,
      paymentDelayMs: 10,
      settlementIntervalMs: 60_000,
    };
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule.forRoot(config)],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    browser = await HeadlessChromium.launch();
  });
  afterAll(async () => {
    // The browser first: its open event stream would otherwise keep the HTTP server busy.
    try {
      await browser?.close();
    } finally {
      try {
        await app?.close();
      } finally {
        await Promise.all([locks?.close(), store?.close()]);
      }
    }
  });

  /** PUT opens an account, POST …/withdraw withdraws (supertest: no keep-alive socket left behind). */
  const send = (path: string, body: object) =>
    path.endsWith('/withdraw') ? request(base).post(path).send(body) : request(base).put(path).send(body);

  test('shows the stopped voter down, a holder and token, a refusal and a stale write', async () => {
    locks.stop(STOPPED); // connected but hung: only the dashboard's periodic probe can tell
    let bobLock: Lock | undefined;
    try {
      const page = await browser!.open(`${base}/dashboard`);

      // A withdrawal: granted, so the page must show this instance as alice's holder, with the token.
      expect((await send('/accounts/alice', { balance: 1000 })).status).toBe(200);
      const granted = await send('/accounts/alice/withdraw', { amount: 100 });
      expect(granted.status).toBe(200);
      const { token } = granted.body as { token: number };

      // Another holder keeps bob's lock: the withdrawal waits its 5 s and is refused (busy).
      expect((await send('/accounts/bob', { balance: 1000 })).status).toBe(200);
      bobLock = await app.get(LockService).acquire('account:bob', { ttl: 20_000 });
      const busy = send('/accounts/bob/withdraw', { amount: 100 }).then((res) => res); // starts it now

      // A newer holder (a fenced read with a higher token) has read carol: the store refuses the
      // app's read, and the page must list the stale access.
      expect((await send('/accounts/carol', { balance: 1000 })).status).toBe(200);
      await new FencedWriter(store.client(0)).hgetall('account:carol', Number.MAX_SAFE_INTEGER);
      expect((await send('/accounts/carol/withdraw', { amount: 100 })).status).toBe(409);

      expect((await busy).status).toBe(409);
      const stoppedPort = `:${locks.port(STOPPED)}`;
      const view = await waitForPage(
        page,
        (v) =>
          v.nodes.length === 5 &&
          v.nodes.every((n) => (n.node.endsWith(stoppedPort) ? n.state === 'down' : n.state === 'up')) &&
          v.accounts.some((a) => a.account === 'alice' && a.token === String(token)) &&
          v.activity.some((e) => e.kind === 'busy') &&
          v.activity.some((e) => e.kind === 'stale-rejected'),
        8000,
      );
      if (process.env.DASHBOARD_SCREENSHOT)
        writeFileSync(process.env.DASHBOARD_SCREENSHOT, await page.screenshot());

      // Voters: the stopped one down (and says so in words), the four others up with a latency.
      expect(view.nodes).toHaveLength(5);
      const down = view.nodes.filter((n) => n.node.endsWith(stoppedPort));
      const up = view.nodes.filter((n) => !n.node.endsWith(stoppedPort));
      expect(down).toHaveLength(1);
      expect(down[0]).toMatchObject({ state: 'down', text: expect.stringMatching(/down/i) });
      for (const n of up)
        expect(n).toMatchObject({ state: 'up', text: expect.stringMatching(/up[\s\S]*latency \d/i) });

      // Holders and tokens: alice's last holder and token; bob held right now by this instance.
      const alice = view.accounts.find((a) => a.account === 'alice');
      expect(alice).toMatchObject({ holder: INSTANCE, token: String(token) });
      expect(alice!.text).toContain(String(token));
      const bob = view.accounts.find((a) => a.account === 'bob');
      expect(bob).toMatchObject({ holder: INSTANCE, token: String(bobLock.fencingToken) });
      expect(bob!.text).toMatch(new RegExp(`held\\s+${INSTANCE}`));

      // Recent activity: alice's grant with its token, bob's refusal, carol's stale read.
      expect(view.activity).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            kind: 'granted',
            resource: 'account:alice',
            text: expect.stringContaining(`token ${token}`),
          }),
          expect.objectContaining({
            kind: 'busy',
            resource: 'account:bob',
            text: expect.stringMatching(/busy/i),
          }),
          expect.objectContaining({
            kind: 'stale-rejected',
            resource: 'account:carol',
            text: expect.stringMatching(/stale write rejected/i),
          }),
        ]),
      );
    } finally {
      await bobLock?.release().catch(() => undefined);
      locks.resume(STOPPED);
    }
  }, 30_000);
});
