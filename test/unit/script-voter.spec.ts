import { SCRIPTS, ScriptCalls, type LuaScript, type ScriptSettings } from '../../lib/core/scripts/index.js';
import type { ScriptClient } from '../../lib/core/voter/script-client.js';
import { ScriptVoter } from '../../lib/core/voter/script-voter.js';
import type { VoterContext } from '../../lib/core/voter/voter.js';
import { WriteWindow } from '../../lib/core/voter/write-batching.js';

/** A client adapter that records the calls and answers them when told to. */
class FakeClient implements ScriptClient {
  readonly label = 'fake://0';
  connected = true;
  connectionError: string | undefined = undefined;
  lastError: string | undefined = undefined;
  reorders?: boolean;
  declaresEveryKey?: boolean;
  keySlot?: (key: string) => number;
  readonly sent: Array<{ script: string; keys: readonly string[]; args: readonly (string | number)[] }> = [];
  private readonly answers: Array<(reply: unknown) => void> = [];

  waitReady = () => Promise.resolve(true);
  markerKey: () => string = () => 'p:__restart_guard__';
  ping = () => Promise.resolve();
  subscribe = () => Promise.resolve();
  onHealthChange = () => undefined;
  close = () => Promise.resolve();

  run<T>(
    script: LuaScript,
    keys: readonly string[],
    args: readonly (string | number)[],
    decode: (reply: unknown) => T,
  ): Promise<T> {
    this.sent.push({ script: script.name, keys, args });
    return new Promise<unknown>((resolve) => this.answers.push(resolve)).then(decode);
  }

  /** Answers the oldest call not answered yet. */
  answer(reply: unknown): void {
    this.answers.shift()!(reply);
  }
}

const settings: ScriptSettings = {
  guardMs: 60_000,
  guardKey: 'p:__restart_guard__',
  fenceIdleMs: 1000,
  turnMs: 200,
  queueIdleMs: 10_000,
  seedWindowMs: 100,
};

function voterOn(client: FakeClient, engine: ScriptSettings = settings): ScriptVoter<FakeClient> {
  const context: VoterContext = {
    scripts: SCRIPTS,
    settings: engine,
    calls: new ScriptCalls(engine),
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    connectTimeout: 1000,
    writes: new WriteWindow(),
  };
  return new ScriptVoter(client, context);
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ScriptVoter: the lock operations once, for any client adapter', () => {
  test('on one server, an acquire and a release send the lock keys and the settings they read', async () => {
    const client = new FakeClient();
    const voter = voterOn(client);
    const vote = voter.acquire(['p:{r}'], 'v', 1000.4, '');
    client.answer(17);
    await expect(vote).resolves.toEqual({ kind: 'granted', tokens: [17] });
    const released = voter.letGo(['p:{r}'], 'v', { op: 'release' });
    client.answer(1);
    await released;
    // The marker, counter and queue are derived in the scripts (key-layout.ts): not sent.
    expect(client.sent).toEqual([
      { script: 'acquire', keys: ['p:{r}'], args: ['v', '60000 1000 100 10000', '1001', ''] },
      { script: 'release', keys: ['p:{r}'], args: ['v', '200 1000'] },
    ]);
  });

  test('on one server whose key prefix holds a "{", the acquire sends the marker after the lock keys', async () => {
    const client = new FakeClient();
    const braced = { ...settings, guardKey: 'p{x}:__restart_guard__' };
    client.markerKey = () => braced.guardKey;
    const vote = voterOn(client, braced).acquire(['p{x}:{r}'], 'v', 1000, '');
    client.answer(17);
    await vote;
    expect(client.sent[0]!.keys).toEqual(['p{x}:{r}', 'p{x}:__restart_guard__']);
  });

  test('on a client that routes by slot, an acquire and a release declare every key they touch', async () => {
    const client = new FakeClient();
    client.declaresEveryKey = true;
    const voter = voterOn(client);
    const vote = voter.acquire(['p:{r}'], 'v', 1000.4, '');
    client.answer(17);
    await expect(vote).resolves.toEqual({ kind: 'granted', tokens: [17] });
    const released = voter.letGo(['p:{r}'], 'v', { op: 'release' });
    client.answer(1);
    await released;
    expect(client.sent).toEqual([
      {
        script: 'acquire-declared',
        keys: ['p:{r}', 'p:{r}:fence', 'p:{r}:queue', 'p:__restart_guard__'],
        args: ['v', '60000 1000 100 10000', '1001', ''],
      },
      { script: 'release-declared', keys: ['p:{r}', 'p:{r}:fence', 'p:{r}:queue'], args: ['v', '200 1000'] },
    ]);
  });

  test("a reader's acquire sends the granting settings and the turn, its let-go the hand-over settings", async () => {
    const client = new FakeClient();
    const voter = voterOn(client);
    const vote = voter.acquire(['p:{r}'], 'v^', 1000.4, '');
    client.answer(17);
    await expect(vote).resolves.toEqual({ kind: 'granted', tokens: [17] });
    const released = voter.letGo(['p:{r}'], 'v^', { op: 'release' });
    client.answer(1);
    await released;
    // READ_ACQUIRE may hand a free key over (promote reads the turn); READ_LET_GO only hands over.
    expect(client.sent.map(({ script, args }) => ({ script, settings: args[1] }))).toEqual([
      { script: 'read-acquire', settings: '60000 1000 100 10000 200' },
      { script: 'read-let-go', settings: '200 1000' },
    ]);
  });

  test('a client that may reorder: a let-go waits for the acquire of the same value', async () => {
    const client = new FakeClient();
    client.reorders = true;
    const voter = voterOn(client);
    const vote = voter.acquire(['p:{r}'], 'v', 1000, '');
    const letGo = voter.letGo(['p:{r}'], 'v', { op: 'release' });
    await tick();
    expect(client.sent.map((call) => call.script)).toEqual(['acquire']);
    client.answer(1);
    await vote;
    await tick();
    expect(client.sent.map((call) => call.script)).toEqual(['acquire', 'release']);
    client.answer(1);
    await letGo;
  });

  test('a client that routes by slot: a batch of extensions is one call per slot', async () => {
    const client = new FakeClient();
    client.keySlot = (key) => (key.includes('{a') ? 1 : 2);
    const extended = voterOn(client).extend([
      { keys: ['p:{a1}'], value: 'v1', ttlMs: 100 },
      { keys: ['p:{b1}'], value: 'v2', ttlMs: 100 },
      { keys: ['p:{a2}'], value: 'v3', ttlMs: 100 },
    ]);
    expect(client.sent.map((call) => call.keys)).toEqual([['p:{a1}', 'p:{a2}'], ['p:{b1}']]);
    client.answer([1, 0]);
    client.answer([1]);
    await expect(extended).resolves.toEqual([true, true, false]);
  });

  test('no one-way capability: let-go one-way is declined; failures name the connection error', () => {
    const client = new FakeClient();
    const voter = voterOn(client);
    expect(voter.letGoOneWay(['p:{r}'], 'v', { op: 'release' })).toBe(false);
    client.connected = false;
    client.lastError = 'connect ECONNREFUSED 127.0.0.1:1';
    expect(voter.failureReason(new Error("Stream isn't writeable"))).toBe(
      'not connected: connect ECONNREFUSED 127.0.0.1:1',
    );
  });
});
