import { RUN_ID } from '../../../lib/core/scripts/guards.js';
import { IDENTITY_SUFFIX } from '../../../lib/core/scripts/keys.js';
import type { Route, Transport, TransportEvent } from '../../../lib/core/transport/transport.js';
import { LOCK_SCRIPTS } from '../../../lib/core/scripts/library.js';
import { TransportVoter } from '../../../lib/core/voter/voter.js';
import { RedisNodes } from '../../../lib/testing/index.js';
import { DEFAULT_SETTINGS, PREFIX, voterContext } from '../../conformance/harness.js';
import { until } from '../deployments/support.js';

/*
 * The identity guard (lib/core/guards/identity.ts) over a transport that does not see its client
 * reconnect (Valkey GLIDE): a vote counts only when the run_id read right behind it, by its own
 * route, is the one of the server checked when it went out. Two real redis-servers: server 0 is the
 * one checked; server 1 is another server with server 0's data (its restart-guard marker and identity
 * record: it abstains for the guard once checked) that the client reaches without a word, as GLIDE
 * does when it reconnects to a restarted server. The transport here stands for the client: it sends each command
 * to the server its connection reaches now, and lets a test move that connection between two
 * commands, route commands by key elsewhere than by shard, or hold a reply back.
 */

const GUARD_MS = 3000;
const KEY = `${PREFIX}{unseen}`;
const settings = { ...DEFAULT_SETTINGS, guardMs: GUARD_MS };

/** A connection to one server (a test client of RedisNodes). */
type Server = { call(name: string, ...args: string[]): Promise<unknown> };

/** A client's connection to one of `servers`, moved silently (seesReconnects false). */
class SilentTransport implements Transport {
  readonly label = 'silent://test';
  readonly clustered = false;
  readonly seesReconnects = false;
  readonly up = true;
  readonly lastError = undefined;
  readonly username = undefined;
  /** The server the connection reaches now. */
  target = 0;
  /** Where commands routed by key go (default: the connection's server). */
  keyTarget: number | undefined;
  /** Called after each command went out, with the command. */
  afterSend: ((command: readonly string[]) => void) | undefined;
  /** Holds a reply back until the promise it returns resolves (undefined: delivered at once). */
  holdReply: ((command: readonly string[]) => Promise<void> | undefined) | undefined;
  /** Fails a command before it goes out (undefined: sent). */
  refuse: ((command: readonly string[]) => Error | undefined) | undefined;
  private readonly listeners: Array<(event: TransportEvent) => void> = [];

  constructor(private readonly servers: readonly Server[]) {}

  shards(): ReadonlyMap<string, readonly number[]> {
    return new Map([['', []]]);
  }
  shardOf(): string {
    return '';
  }
  epoch(): number {
    return 0;
  }
  send(route: Route, command: readonly string[]): Promise<unknown> {
    const refused = this.refuse?.(command);
    if (refused) return Promise.reject(refused);
    const server = route && 'key' in route && this.keyTarget !== undefined ? this.keyTarget : this.target;
    const [name, ...args] = command as [string, ...string[]];
    const reply = this.servers[server]!.call(name, ...args);
    this.afterSend?.(command);
    const held = this.holdReply?.(command);
    return held ? Promise.all([reply, held]).then(([value]) => value) : reply;
  }
  async connect(): Promise<boolean> {
    return true;
  }
  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }
  async subscribe(): Promise<void> {}
  async close(): Promise<void> {}
}

const isRunId = (command: readonly string[]) =>
  (command[0] === 'EVALSHA' && command[1] === RUN_ID.sha) ||
  (command[0] === 'EVAL' && command[1] === RUN_ID.source);
const isScript = (command: readonly string[]) => command[0] === 'EVALSHA' || command[0] === 'EVAL';

describe('identity guard over a client that reconnects without a word', () => {
  let nodes: RedisNodes;
  let transport: SilentTransport;
  let voter: TransportVoter;

  beforeAll(async () => {
    nodes = await RedisNodes.start(2);
  });
  afterAll(() => nodes.close());

  beforeEach(async () => {
    await Promise.all([0, 1].map((i) => nodes.client(i).flushall()));
    // Server 0 in service: its marker says the guard has passed, and it is checked (record written).
    await nodes.client(0).set(settings.guardKey, '0');
    transport = new SilentTransport([nodes.client(0), nodes.client(1)]);
    voter = new TransportVoter(transport, voterContext(settings));
    expect(await voter.waitReady(3000)).toBe(true);
    expect(voter.abstainingForMs([KEY])).toBe(0);
    // Server 1 has server 0's data (as after a restart with AOF everysec, or a failover): the marker
    // says the guard has passed, and the identity record names server 0. Only the identity guard
    // can tell it is another server.
    const record = await nodes.client(0).get(settings.guardKey + IDENTITY_SUFFIX);
    expect(record).toMatch(/^\w+ 0$/);
    await nodes.client(1).set(settings.guardKey, '0');
    await nodes.client(1).set(settings.guardKey + IDENTITY_SUFFIX, record!);
    // Both have the scripts cached: each call is one command (no NOSCRIPT and EVAL after it).
    for (const script of [RUN_ID, ...LOCK_SCRIPTS]) {
      await Promise.all([0, 1].map((i) => nodes.client(i).call('SCRIPT', 'LOAD', script.source)));
    }
  });
  afterEach(() => voter.close(1000));

  const value = () => `v:${Math.random().toString(36).slice(2)}`;

  test('a reconnection right after the first command of a vote: the run_id behind the vote shows it', async () => {
    let moved = false;
    transport.afterSend = (command) => {
      if (!moved && isScript(command)) {
        moved = true;
        transport.target = 1;
      }
    };
    // The run_id read first, then the vote: the read finds the server checked, the grant lands on
    // the other one and counts. The vote first: its run_id read finds the other server.
    const vote = await voter.acquire([KEY], value(), 10_000, '');
    expect(moved).toBe(true);
    expect(vote.kind).toBe('abstaining');
    expect(await nodes.client(1).exists(KEY)).toBe(0);
  });

  test('a check that ends before the run_id comes back does not make the vote sent before it count', async () => {
    transport.target = 1; // reconnected to server 1, unseen
    // The run_id behind the vote comes back only once the survey has found server 1 and its check
    // made it abstain: compared with the run_id checked now (server 1's), the grant would count.
    transport.holdReply = (command) =>
      isRunId(command) ? until(() => voter.abstainingForMs([KEY]) > 0, 5000) : undefined;
    const vote = await voter.acquire([KEY], value(), 10_000, '');
    expect(vote.kind).toBe('abstaining');
    expect(await nodes.client(1).exists(KEY)).toBe(0);
  });

  test('the run_id goes by the route of the vote: a client that routes a key elsewhere than the shard checked', async () => {
    // Keys go to server 1 (a client's own slot map, ahead of the survey); the shard is server 0.
    transport.keyTarget = 1;
    const vote = voter.acquire([KEY], value(), 10_000, '');
    // It does not count (the engine lets go of a failed vote); compared on the shard, it would.
    await expect(vote).rejects.toThrow(/connection changed/);
  });

  test('a changed run_id makes the shard unchecked: the next vote waits for a check, also after one failed', async () => {
    transport.target = 1;
    // The first check of server 1 fails (as on a Cluster that still says CLUSTERDOWN).
    let failures = 0;
    transport.refuse = (command) =>
      command.includes(settings.guardKey + IDENTITY_SUFFIX) && failures++ === 0
        ? new Error('CLUSTERDOWN The cluster is down')
        : undefined;
    const vote = await voter.acquire([KEY], value(), 10_000, '');
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(vote.kind).toBe('abstaining');
    expect(await nodes.client(1).exists(KEY)).toBe(0);
  });
});
