import { inMemoryServersThatFail } from '../../docs/examples/unit-testing.js';
import { QuorumUnavailableError, Redlock } from '../../lib/index.js';
import { ACQUIRE } from '../../lib/core/scripts/acquire.js';
import { INSPECT } from '../../lib/core/scripts/inspect.js';
import { keySlot, SLOT_COUNT } from '../../lib/core/scripts/keys.js';
import type { TransportEvent } from '../../lib/core/transport/transport.js';
import {
  ConnectionDropped,
  MemoryServer,
  MemoryTransport,
  memoryNode,
  type MemoryNetwork,
} from '../../lib/testing/index.js';

/*
 * The in-memory transport as the simulator drives it (issue 35 item 2, issue 37 item 2): its network
 * hook (a command lost, a reply lost after the effect, a dropped connection), reconnections and
 * epochs, the script cache, a Cluster of servers, and an engine whose voters are memory servers.
 * The scripts themselves are held to the Lua by test/integration/memory/differential.spec.ts.
 */

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const settings = '0 60000 200 5000 300 0';
const acquireArgs = (key: string, value: string) => [
  'EVAL',
  ACQUIRE.source,
  '4',
  key,
  `${key}:fence`,
  `${key}:queue`,
  'm:__restart_guard__',
  value,
  settings,
  '5000',
  '',
  '',
];

/** A transport on `servers` whose events are recorded. */
async function connected(servers: MemoryServer[], network?: MemoryNetwork) {
  const transport = new MemoryTransport(servers, undefined, { network });
  const events: TransportEvent[] = [];
  transport.on((event) => events.push(event));
  expect(await transport.connect(1000)).toBe(true); // connected from the start
  await new Promise((resolve) => setImmediate(resolve)); // and it says so once its listeners are on
  return { transport, events };
}

describe('MemoryTransport', () => {
  test('connected on creation, and says so: connected (a new epoch), then up', async () => {
    const { transport, events } = await connected([new MemoryServer()]);
    expect(events.map((e) => e.type)).toEqual(['connected', 'up']);
    expect(transport.epoch('')).toBe(1);
    expect(await transport.send(undefined, ['PING'])).toBe('PONG');
  });

  test('the network hook: a command lost on the way never applies; a reply lost after it applied leaves the effect', async () => {
    const server = new MemoryServer();
    let fate: 'lost' | 'reply lost' | 'delivered' = 'delivered';
    const network: MemoryNetwork = (_server, _command, arrive) => {
      if (fate === 'lost') return new Promise(() => undefined);
      if (fate === 'reply lost') return (void arrive(), new Promise(() => undefined));
      return Promise.resolve().then(arrive);
    };
    const { transport } = await connected([server], network);
    fate = 'lost';
    void transport.send({ key: 'm:{a}' }, acquireArgs('m:{a}', 'e:1'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(server.get('m:{a}')).toBeUndefined();
    fate = 'reply lost';
    void transport.send({ key: 'm:{a}' }, acquireArgs('m:{a}', 'e:1'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(server.get('m:{a}')).toBe('e:1');
  });

  test('a dropped connection (ConnectionDropped) reconnects on a new epoch; a command that arrives after its connection dropped fails', async () => {
    const server = new MemoryServer();
    let drop = false;
    let held: (() => unknown) | undefined;
    const network: MemoryNetwork = (_server, command, arrive) => {
      if (command[0] === 'HOLD')
        return new Promise((resolve) => (held = () => resolve(Promise.resolve().then(arrive))));
      return Promise.resolve().then(() => (drop ? Promise.reject(new ConnectionDropped()) : arrive()));
    };
    const { transport, events } = await connected([server], network);
    const late = transport.send(undefined, ['HOLD']).catch((err: Error) => err.message);
    drop = true;
    await expect(transport.send(undefined, ['PING'])).rejects.toBeInstanceOf(ConnectionDropped);
    expect(events.map((e) => e.type)).toEqual(['connected', 'up', 'down', 'connected', 'up']);
    expect(transport.epoch('')).toBe(3);
    held!();
    expect(await late).toBe('Connection is closed.');
  });

  test('a restart is a reconnection to a new server: new run_id, empty script cache, data kept or lost', async () => {
    const server = new MemoryServer();
    const { transport, events } = await connected([server]);
    const runId = (info: unknown) => /run_id:(\w+)/.exec(String(info))?.[1];
    const before = runId(await transport.send(undefined, ['INFO', 'server']));
    await expect(transport.send(undefined, ['EVALSHA', INSPECT.sha, '2', 'k', 'k:fence'])).rejects.toThrow(
      /NOSCRIPT/,
    );
    await transport.send(undefined, ['SCRIPT', 'LOAD', INSPECT.source]);
    expect(await transport.send(undefined, ['EVALSHA', INSPECT.sha, '2', 'k', 'k:fence'])).toHaveLength(4);
    server.set('kept', '1');
    server.restart({ keepData: true });
    expect(events.map((e) => e.type)).toEqual(['connected', 'up', 'down', 'connected', 'up']);
    expect(runId(await transport.send(undefined, ['INFO', 'server']))).not.toBe(before);
    await expect(transport.send(undefined, ['EVALSHA', INSPECT.sha, '2', 'k', 'k:fence'])).rejects.toThrow(
      /NOSCRIPT/,
    );
    expect(server.get('kept')).toBe('1');
    server.restart({ keepData: false });
    expect(server.get('kept')).toBeUndefined();
    server.stop();
    await expect(transport.send(undefined, ['PING'])).rejects.toThrow(/closed/);
    expect(transport.up).toBe(false);
  });

  test('a Cluster of three servers: the slots split among them, a key goes to its server, a message published on any reaches a subscriber once', async () => {
    const servers = [new MemoryServer(), new MemoryServer(), new MemoryServer()];
    const { transport } = await connected(servers);
    const shards = [...transport.shards()];
    expect(shards.map(([id]) => id)).toEqual(servers.map((s) => s.name));
    expect(shards.flatMap(([, slots]) => slots)).toEqual(Array.from({ length: SLOT_COUNT }, (_, s) => s));
    for (const key of ['m:{a}', 'm:{b}', 'm:{c}', 'm:{d}']) {
      await transport.send({ key }, acquireArgs(key, 'e:1'));
      const owner = servers[Math.floor((keySlot(key) * 3) / SLOT_COUNT)]!;
      expect(servers.filter((s) => s.get(key) === 'e:1')).toEqual([owner]);
    }
    const heard: string[] = [];
    await transport.subscribe('channel', (message) => heard.push(message));
    expect(servers.map((s, i) => s.publish('channel', `from ${i}`))).toEqual([1, 1, 1]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(heard).toEqual(['from 0', 'from 1', 'from 2']);
    await transport.close();
    expect(servers[0]!.publish('channel', 'after close')).toBe(0);
  });
});

describe('an engine on memory servers (the library voter over MemoryTransport)', () => {
  test('locks with increasing tokens; a server restarted without its data abstains for the restart guard', async () => {
    const servers = [new MemoryServer(), new MemoryServer(), new MemoryServer()];
    const engine = new Redlock({
      nodes: servers.map((s) => memoryNode(s)),
      restartGuard: 500,
      ttl: 400,
      logger: quiet,
    });
    try {
      // New servers: every voter abstains for the guard from its first connection.
      await engine.connect();
      expect(engine.status().every((s) => s.abstainingUntil !== undefined)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 550));
      const first = await engine.acquire('r');
      await first.release();
      servers[0]!.restart({ keepData: false });
      const second = await engine.acquire('r');
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      await second.release();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(engine.status().map((s) => s.abstainingUntil !== undefined)).toEqual([true, false, false]);
      // A majority restarted without data: no quorum until the guard has passed.
      servers[1]!.restart({ keepData: false });
      await expect(engine.tryAcquire('r2')).rejects.toThrow(QuorumUnavailableError);
    } finally {
      await engine.close();
    }
  });

  test("docs/testing.md's example: a lock held through a voter's crash and another's clock step", async () => {
    expect(await inMemoryServersThatFail()).toBeGreaterThan(0);
  });
});
