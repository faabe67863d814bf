import { Redlock } from '../../lib/core/engine/redlock.js';
import { QuorumUnavailableError } from '../../lib/core/errors.js';
import type { RedlockLogger } from '../../lib/core/logger.js';
import type { Voter } from '../../lib/core/voter/voter-api.js';
import { PREFIX, sleep, until, type Behaviour } from './harness.js';

/*
 * Rows only a voter of several shards (a Cluster) can have, beside the table's (behaviours.ts), on
 * every Cluster column; `n/a` on the others. They see the engine too: what a shard's abstention
 * does to the voter as a whole (status, health, hand-overs) is the engine's doing.
 */

const silent: RedlockLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * `voter` lent to an engine of the row's own: the row closes it (runRow), not that engine; `counted`
 * counts the engine's acquires through it.
 */
function lent(voter: Voter, counted: { acquires: number }): Voter {
  return new Proxy(voter, {
    get(target, property) {
      if (property === 'close') return () => Promise.resolve();
      if (property === 'acquire') counted.acquires++;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Why `err` refused a lock: the nodes' reasons too, where the error has them. */
const reasonOf = (err: unknown): string =>
  err instanceof QuorumUnavailableError
    ? `${err.message} ${err.failures.map((f) => f.reason).join('; ')}`
    : String(err);

export const CLUSTER_BEHAVIOURS: Behaviour[] = [
  {
    id: 'shard-abstention',
    title:
      'shard abstention: after ONE master restarted (data kept, another run_id) only its slots abstain: the others grant at once, status shows no abstaining voter, a waiter there is handed the lock',
    // Longer than a restart of one master and the cluster's return to health take here: every
    // assertion below runs within the guard (the last one checks it still runs).
    settings: { guardMs: 5000 },
    async run({ voter, key, settings, shardOf, changeOneServer, note }) {
      const guard = settings.guardMs;
      const restarted = await shardOf(key('sa'));
      // Two resources whose slots are on the other masters.
      const elsewhere: string[] = [];
      for (let i = 0; elsewhere.length < 2; i++) {
        if ((await shardOf(key(`sa-${i}`))) !== restarted) elsewhere.push(`sa-${i}`);
      }
      const [held, other] = elsewhere as [string, string];
      // One voter: quorum 1, so each of its votes decides.
      const through = { acquires: 0 };
      const engine = new Redlock({
        nodes: [{ createVoter: () => lent(voter, through) }],
        keyPrefix: PREFIX,
        restartGuard: guard,
        ttl: 4000,
        nodeTimeout: 1000,
        retryDelay: 2000,
        retryJitter: 0,
        preflight: 'off',
        telemetry: false,
        logger: silent,
      });
      try {
        await engine.connect();
        // Each shard voted before the change: an abstention after it is the identity guard's.
        await (await engine.acquire('sa')).release();
        const holder = await engine.acquire(held);
        const changing = performance.now();
        await changeOneServer(restarted);
        // Refused on the restarted master's slots, as abstaining (while the client still finds its
        // way to the new server, or its check fails, the refusal says so: asked again, for 3 s).
        const refusal = async (): Promise<string> => {
          for (const asked = performance.now(); ; await sleep(50)) {
            const why = await engine.acquire('sa').then(async (lock) => {
              await lock.release();
              return 'granted';
            }, reasonOf);
            if (why === 'granted') throw new Error('a key on the restarted master was granted');
            if (/abstaining/.test(why)) return why;
            if (performance.now() - asked > 3000) throw new Error(why);
          }
        };
        await refusal();
        const status = () => engine.status()[0]!;
        expect(status()).toMatchObject({ reachable: true });
        expect(status().abstainingUntil).toBeUndefined();
        // Another master's slots: granted at once.
        const asked = performance.now();
        const lock = await engine.acquire(other);
        const grantMs = performance.now() - asked;
        expect(grantMs).toBeLessThan(500);
        await lock.release();
        // A waiter on another master's key is handed the lock on release: the hand-over counts,
        // with no attempt of its own after it (a voter taken for abstaining hands over in vain:
        // the waiter then takes what was handed with one more acquire).
        const queuing = through.acquires;
        const waiting = engine.acquire(held, { wait: 3000 });
        // The engine's first wait: its attempt queues it, it subscribes to its wake channel (a node
        // hands over only to a waiter it is heard by), then asks once more at once (engine/wait.ts).
        // Once that second attempt is sent (on the connection the release takes after it), the
        // waiter is in line and heard; a fixed sleep here was outlasted on a loaded machine.
        await until(() => through.acquires >= queuing + 2, 'the waiter to queue, listen and ask again', 3000);
        const [releasing, acquiresBefore] = [performance.now(), through.acquires];
        await holder.release();
        const handed = await waiting;
        const handOverMs = performance.now() - releasing;
        expect({ acquiresAfterRelease: through.acquires - acquiresBefore }).toEqual({
          acquiresAfterRelease: 0,
        });
        expect(handOverMs).toBeLessThan(1000);
        await handed.release();
        // Still within the guard: refused there again, and still no abstaining voter.
        await refusal();
        expect(status().abstainingUntil).toBeUndefined();
        expect(performance.now() - changing).toBeLessThan(guard);
        note(`grant ${Math.round(grantMs)} ms, hand-over ${Math.round(handOverMs)} ms`);
      } finally {
        await engine.close();
      }
    },
  },
];
