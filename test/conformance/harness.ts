import type { RedlockLogger } from '../../lib/core/logger.js';
import { realRuntime, type Runtime } from '../../lib/core/runtime.js';
import {
  decodeWakeMessage,
  LockValues,
  type ScriptSettings,
  type WakeMessage,
} from '../../lib/core/scripts/index.js';
import { GUARD_MARKER_NAME } from '../../lib/core/scripts/keys.js';
import type { Voter, VoterContext } from '../../lib/core/voter/voter-api.js';

/*
 * The voter conformance table's machinery (issue 25, item 4): a row (behaviours.ts) is a small
 * scenario on one voter, through the Voter interface only; a column (drivers.ts) is a voter
 * implementation, built in ONE place (its driver); a mutation (mutations.ts) wraps a working voter
 * to break exactly one row's behaviour.
 */

/** Key prefix of every key the table writes (no brace: a Cluster voter refuses one). */
export const PREFIX = 'cf:';

/** The settings a row's voter is built with, unless the row says otherwise. */
export const DEFAULT_SETTINGS: ScriptSettings = {
  guardMs: 0,
  guardKey: PREFIX + GUARD_MARKER_NAME,
  fenceIdleMs: 60_000,
  turnMs: 300,
  queueIdleMs: 5_000,
  seedWindowMs: 200,
};

/** Says nothing: the rows assert what voters do, not what they log. */
const silent: RedlockLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * The context an engine gives its voters, for `settings`: the one place that knows what an engine
 * passes. `runtime`: the column's time (an injected clock's, or the real one).
 */
export function voterContext(settings: ScriptSettings, runtime: Runtime = realRuntime): VoterContext {
  return { settings, logger: silent, connectTimeout: 2000, nodeTimeout: 1000, runtime };
}

/**
 * One column of the table: a voter implementation and the server (or state) behind it. A new
 * voter joins the table with one driver (one line in drivers.ts, built with a helper there).
 */
export interface VoterDriver {
  /** The column's title. */
  readonly name: string;
  /** The runtime its voters run on (the injected clock's); the real one when unset. */
  readonly runtime?: Runtime;
  /** 'injected': time moves only when a row advances it; 'real': rows wait. */
  readonly clock: 'injected' | 'real';
  /** How far (ms) a duration the rows measure may fall short of the exact one (0 under an injected clock). */
  readonly slack: number;
  /** Rows this voter cannot have, each with its one-line reason (shown as a skip). */
  readonly cannot: Partial<Record<string, string>>;
  /** Starts what the column needs (servers), once per test file. */
  start(): Promise<void>;
  /** A voter of this column's server (another client of it: each call is one more engine). */
  createVoter(context: VoterContext): Promise<Voter>;
  /** Between rows: forgets every key and closes what the row opened (clients passed in included). */
  reset(): Promise<void>;
  /** Moves this column's time forward by `ms` (steps the injected clock, or waits). */
  advance(ms: number): Promise<void>;
  /**
   * This column's time, ms, on the clock its leases run by (the injected clock, or real monotonic
   * time): how far a row's durations can have shrunk since it read it.
   */
  now(): number;
  /** The server's clock in microseconds (what TIME gives the scripts). */
  serverTimeUs(): Promise<number>;
  /** The server loses all of its data, as in a restart without persistence (FLUSHALL). */
  loseData(): Promise<void>;
  /**
   * Another server process now answers at the voter's address with the data of the one before (a
   * restart with AOF everysec, as after a failover); resolves once it answers. Undefined where the
   * voter has no identity guard.
   */
  changeServer?(): Promise<number | void>;
  /** Which of its servers (a Cluster's masters, by index) holds `key`. Undefined: one server. */
  shardOf?(key: string): Promise<number>;
  /**
   * Like {@link changeServer}, for server `index` alone (one master of a Cluster restarts with its
   * data); resolves once the cluster is healthy. Undefined: one server.
   */
  changeOneServer?(index: number): Promise<void>;
  /** Stops what {@link start} started. */
  stop(): Promise<void>;
}

/** An engine as the rows see it: lock values of its own, and its wake channel's messages. */
export class Engine {
  private readonly values = new LockValues(realRuntime);
  readonly messages: WakeMessage[] = [];

  /** A new lock value of this engine (several resources: marked, see scripts/lock-value.ts). */
  value(multiResource = false): string {
    return this.values.next(multiResource);
  }

  get channel(): string {
    return this.values.channel;
  }

  /** Subscribes to this engine's wake channel on `voter`. */
  listen(voter: Voter): Promise<void> {
    return voter.subscribe(this.channel, (raw) => {
      const message = decodeWakeMessage(raw);
      if (message) this.messages.push(message);
    });
  }
}

/** What a row runs with. */
export interface Scene {
  /** The voter under test, built with the row's settings (and its mutation, if any). */
  readonly voter: Voter;
  readonly settings: ScriptSettings;
  /** Another client of the same server (another engine's voter), with these settings. */
  voterWith(settings?: Partial<ScriptSettings>): Promise<Voter>;
  /** A lock key of its own hash tag (its own slot on a Cluster). */
  key(name: string): string;
  /** `count` lock keys that share one hash tag (one slot), for locks of several resources. */
  keys(name: string, count: number): string[];
  engine(): Engine;
  advance(ms: number): Promise<void>;
  /** The column's time, ms (see VoterDriver.now). */
  now(): number;
  serverTimeUs(): Promise<number>;
  loseData(): Promise<void>;
  /** Resolves with the number of servers that changed (a Cluster's masters), 1 when not said. */
  changeServer(): Promise<number>;
  /** Which server (a Cluster's master, by index) holds `key`: the driver's shardOf (Cluster rows). */
  shardOf(key: string): Promise<number>;
  /** Server `index` alone changes (see VoterDriver.changeOneServer; Cluster rows). */
  changeOneServer(index: number): Promise<void>;
  /**
   * What `voter` (one of this scene's) told its onAbstention listeners so far: a listener is
   * registered as soon as a voter is built, before its connection is checked.
   */
  abstentionsOf(voter: Voter): ReadonlyArray<{ forMs: number; why: string }>;
  /** A remark for the results table (e.g. which release path ran). */
  note(text: string): void;
  /** The driver's slack on durations (ms): 0 under an injected clock. */
  readonly slack: number;
}

/** One row of the table. */
export interface Behaviour {
  readonly id: string;
  readonly title: string;
  /** Settings the row's voter needs beyond {@link DEFAULT_SETTINGS}. */
  readonly settings?: Partial<ScriptSettings>;
  run(scene: Scene): Promise<void>;
}

/** Breaks a voter: returns a voter that misbehaves in exactly one way (mutations.ts). */
export type Mutation = (voter: Voter) => Voter;

/** Polls `check` every few ms (real time: delivery, not the clock under test), at most `ms`. */
export async function until(check: () => boolean, what: string, ms = 1000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A runtime whose time moves only when a test says so (an injected clock): its timers fire, in
 * order, as {@link advance} passes them; deferrals and randomness are the real ones.
 */
export class ManualRuntime implements Runtime {
  private ms = 0;
  private readonly epochMs = Date.now();
  private timers: Array<{ at: number; fire: () => void }> = [];

  readonly now = (): number => this.ms;
  readonly wallNow = (): number => this.epochMs + this.ms;
  readonly defer = (fire: () => void): void => void setImmediate(fire);
  readonly endOfTick = realRuntime.endOfTick;
  readonly random = realRuntime.random;
  readonly randomText = realRuntime.randomText;

  setTimeout(fire: () => void, ms: number): () => void {
    const timer = { at: this.ms + Math.max(0, ms), fire };
    this.timers.push(timer);
    return () => void (this.timers = this.timers.filter((t) => t !== timer));
  }

  /** Moves time forward by `ms`, firing the timers due on the way (each when its time comes). */
  async advance(ms: number): Promise<void> {
    const end = this.ms + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.ms = Math.max(this.ms, next.at);
      next.fire();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.ms = end;
  }

  /** Forgets every timer (between rows: the row's voters are closed). */
  reset(): void {
    this.timers = [];
  }
}

/**
 * Runs `behaviour` on `driver`: a fresh keyspace, voters built by the driver (each wrapped by
 * `mutation`), everything closed after. Resolves with the row's notes.
 */
export async function runRow(
  driver: VoterDriver,
  behaviour: Behaviour,
  mutation: Mutation = (voter) => voter,
): Promise<string[]> {
  const notes: string[] = [];
  const voters: Voter[] = [];
  const base = { ...DEFAULT_SETTINGS, ...behaviour.settings };
  const heard = new Map<Voter, Array<{ forMs: number; why: string }>>();
  const make = async (settings: ScriptSettings): Promise<Voter> => {
    const built = await driver.createVoter(voterContext(settings, driver.runtime));
    voters.push(built);
    const voter = mutation(built);
    const reports: Array<{ forMs: number; why: string }> = [];
    heard.set(voter, reports);
    voter.onAbstention?.((forMs, why) => reports.push({ forMs, why }));
    if (!(await voter.waitReady(5000))) throw new Error(`${driver.name}: voter not ready`);
    return voter;
  };
  await driver.reset();
  try {
    const voter = await make(base);
    const scene: Scene = {
      voter,
      settings: base,
      voterWith: (settings = {}) => make({ ...base, ...settings }),
      key: (name) => `${PREFIX}{${name}}`,
      keys: (name, count) => Array.from({ length: count }, (_, i) => `${PREFIX}{{${name}}r${i}}`),
      engine: () => new Engine(),
      advance: (ms) => driver.advance(ms),
      now: () => driver.now(),
      serverTimeUs: () => driver.serverTimeUs(),
      loseData: () => driver.loseData(),
      changeServer: () => {
        if (!driver.changeServer) throw new Error(`${driver.name} cannot change its server`);
        return driver.changeServer().then((changed) => changed ?? 1);
      },
      shardOf: (key) => {
        if (!driver.shardOf) throw new Error(`${driver.name} has one server`);
        return driver.shardOf(key);
      },
      changeOneServer: (index) => {
        if (!driver.changeOneServer) throw new Error(`${driver.name} has one server`);
        return driver.changeOneServer(index);
      },
      abstentionsOf: (voter) => heard.get(voter) ?? [],
      note: (text) => void notes.push(text),
      slack: driver.slack,
    };
    await behaviour.run(scene);
    return notes;
  } finally {
    await Promise.all(voters.map((voter) => voter.close(1000)));
    await driver.reset();
  }
}
