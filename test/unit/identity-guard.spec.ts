import { realRuntime } from '../../lib/core/runtime.js';
import { GUARD_MARKER_NAME } from '../../lib/core/scripts/keys.js';
import { TransportVoter } from '../../lib/core/voter/voter.js';
import type { VoterContext } from '../../lib/core/voter/voter-api.js';
import { MemoryServer, MemoryTransport, type MemoryNetwork } from '../../lib/testing/index.js';

/*
 * The identity guard (lib/core/guards/identity.ts), one mechanism for every client and topology,
 * on the in-memory transport, whose network hook orders what a real network only makes likely:
 * a reply that crossed a change of server, and two clients that see the change one after the other.
 * (The conformance table's "identity guard" row runs the guard on every real client.)
 */

const GUARD_MS = 150;
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const context: VoterContext = {
  settings: {
    guardMs: GUARD_MS,
    guardKey: `ig:${GUARD_MARKER_NAME}`,
    fenceIdleMs: 60_000,
    seedWindowMs: 100,
    queueIdleMs: 5000,
    turnMs: 300,
  },
  logger: quiet,
  connectTimeout: 1000,
  nodeTimeout: 500,
  runtime: realRuntime,
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A network that delivers at once, except the commands `hold` picks: applied on arrival but their
 * replies kept back ('reply'), or kept back on the way ('command'), until `release`.
 */
function gate() {
  const held: Array<() => void> = [];
  let picks: ((command: readonly string[]) => boolean) | undefined;
  let what: 'reply' | 'command' = 'reply';
  const network: MemoryNetwork = (_server, command, arrive) => {
    if (!picks?.(command)) return Promise.resolve().then(arrive);
    if (what === 'command') {
      return new Promise((resolve, reject) =>
        held.push(() => Promise.resolve().then(arrive).then(resolve, reject)),
      );
    }
    const reply = Promise.resolve().then(arrive);
    return new Promise((resolve, reject) => held.push(() => void reply.then(resolve, reject)));
  };
  return {
    network,
    hold(kind: 'reply' | 'command', which: (command: readonly string[]) => boolean) {
      [what, picks] = [kind, which];
    },
    release() {
      picks = undefined;
      for (const deliver of held.splice(0)) deliver();
    },
  };
}

/** A voter on `server` through its own connection, ready (its first check passed). */
async function voterOn(server: MemoryServer, network?: MemoryNetwork): Promise<TransportVoter> {
  const voter = new TransportVoter(new MemoryTransport([server], realRuntime, { network }), context);
  expect(await voter.waitReady(1000)).toBe(true);
  return voter;
}

describe('the identity guard', () => {
  test('a grant whose reply comes back after the server changed is let go of, and the vote cast again abstains', async () => {
    const server = new MemoryServer();
    const net = gate();
    const voter = await voterOn(server, net.network);
    await sleep(GUARD_MS + 20); // a new server's guard (from its first check) passes
    expect((await voter.acquire(['ig:{a}'], 'e:1', 5000, '')).kind).toBe('granted');
    // The next grant applies on the server, then its reply waits while the server restarts (AOF).
    net.hold('reply', (command) => command.includes('e:2'));
    const vote = voter.acquire(['ig:{b}'], 'e:2', 5000, '');
    await sleep(5);
    expect(server.get('ig:{b}')).toBe('e:2');
    server.restart({ keepData: true });
    net.release();
    const answer = await vote;
    expect(answer.kind).toBe('abstaining');
    // Let go of where it was granted: the key is free on the server that changed.
    expect(server.get('ig:{b}')).toBeUndefined();
    await voter.close(500);
  });

  test('a client that saw its server change abstains for the guard, also after another client checked it long before', async () => {
    const server = new MemoryServer();
    const late = gate();
    const [first, second] = [await voterOn(server), await voterOn(server, late.network)];
    await sleep(GUARD_MS + 20);
    // The second client's commands are held from the restart on: the first checks the new server
    // (its record now names it) and the guard passes before the second hears of the change.
    late.hold('command', () => true);
    server.restart({ keepData: true });
    await sleep(50);
    expect((await first.acquire(['ig:{c}'], 'e:3', 5000, '')).kind).toBe('abstaining');
    await sleep(GUARD_MS + 20);
    expect((await first.acquire(['ig:{c}'], 'e:3', 5000, '')).kind).toBe('granted');
    late.release();
    const vote = await second.acquire(['ig:{d}'], 'e:4', 5000, '');
    // It saw another server than the one it checked: it abstains for the whole guard, as if first.
    expect(vote.kind).toBe('abstaining');
    expect((vote as { forMs: number }).forMs).toBeGreaterThan(GUARD_MS - 20);
    await Promise.all([first.close(500), second.close(500)]);
  });

  test('a server whose check keeps failing is checked again once a second, however many votes asked meanwhile', async () => {
    // Found by the deterministic simulation: each failed check armed a retry of its own, so a
    // voter that stayed unreachable was checked as often as votes had asked (INFO storms).
    const server = new MemoryServer();
    let failing = false;
    let infos = 0;
    const network: MemoryNetwork = (_server, command, arrive) => {
      if (command[0] === 'INFO' && (infos++, failing))
        return Promise.reject(new Error('ERR the simulated INFO failed'));
      return Promise.resolve().then(arrive);
    };
    const voter = await voterOn(server, network);
    failing = true;
    server.restart({ keepData: true }); // a new connection: checked again, and the check fails
    for (let i = 0; i < 30; i++) await voter.acquire(['ig:{f}'], `e:f${i}`, 5000, '').catch(() => undefined);
    await sleep(50);
    const before = infos;
    await sleep(2200);
    expect(infos - before).toBeGreaterThan(0); // it is retried
    expect(infos - before).toBeLessThanOrEqual(6); // twice (INFO server + replication), not 30 times, a second
    await voter.close(500);
  });

  test('control: a client that did not see a change votes at once', async () => {
    const server = new MemoryServer();
    const voter = await voterOn(server);
    await sleep(GUARD_MS + 20);
    expect((await voter.acquire(['ig:{e}'], 'e:5', 5000, '')).kind).toBe('granted');
    await voter.close(500);
  });
});
