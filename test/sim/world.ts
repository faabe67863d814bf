import { Redlock } from '../../lib/core/index.js';
import type { RedlockLogger } from '../../lib/core/logger.js';
import { GUARD_MARKER_NAME } from '../../lib/core/scripts/keys.js';
import { memoryNode, MemoryServer, type KeyspaceImage } from '../../lib/testing/index.js';
import { Link, type NetworkFaults } from './network.js';
import { Random } from './random.js';
import { ProcessRuntime, type Scheduler, SimProcess } from './scheduler.js';
import { FencedStore } from './store.js';

/** How a voter keeps its data across a crash. */
export type Persistence = 'none' | 'everysec' | 'always';

/** The engine settings of one run (drawn from its seed: see config.ts). */
export interface EngineSettings {
  readonly ttl: number;
  readonly nodeTimeout: number;
  readonly restartGuard: number | false;
  readonly clockGuard: number | false | undefined;
  readonly healHolds: boolean;
  readonly retryDelay: number;
  readonly retryJitter: number;
}

export const KEY_PREFIX = 'redlock:';
const silent: RedlockLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** Something the world did, for the report of a violation and the timeline. */
export interface WorldEvent {
  readonly at: number;
  readonly what: string;
  /** The voters it hit (indices), for the timeline's node lanes. */
  readonly voters?: readonly number[];
  /** How long it lasted, ms (a partition, a pause). */
  readonly forMs?: number;
}

/**
 * One voter: a {@link MemoryServer} whose connections hear it stop and start through each client's
 * link (after the replies already on their way), and whose subscriptions end with their client.
 */
export class SimServer extends MemoryServer {
  /** Its last fsync (AOF everysec), its replica's copy: images taken as the world runs. */
  fsynced: KeyspaceImage | undefined;
  replica: KeyspaceImage | undefined;

  constructor(
    private readonly world: World,
    readonly index: number,
    readonly process: SimProcess,
    readonly clock: ProcessRuntime,
    readonly persistence: Persistence,
  ) {
    super({
      runtime: clock,
      name: `v${index}`,
      config: persistence === 'none' ? {} : { appendonly: 'yes', appendfsync: persistence },
    });
  }

  override attach(connection: (up: boolean) => void): () => void {
    const link = this.world.linkOf(this.world.sim.current, this.index);
    return super.attach((up) =>
      up ? link.notify(() => connection(true)) : link.reset(() => connection(false)),
    );
  }

  override subscribe(channel: string, deliver: (message: string) => boolean): () => void {
    const unsubscribe = super.subscribe(channel, deliver);
    this.world.onDeath(this.world.sim.current, unsubscribe);
    return unsubscribe;
  }
}

/** One incarnation of a client process: its engine, its links to the voters. */
export interface Client {
  readonly slot: number;
  readonly process: SimProcess;
  readonly runtime: ProcessRuntime;
  readonly engine: Redlock;
  /** Resolves once the engine's bootstrap ended (false: it failed). */
  readonly connected: Promise<boolean>;
}

/**
 * The simulated world of one run: voters (in-memory servers with their own clocks, drift and
 * persistence), clients (each a real Redlock engine over in-memory transports, on a runtime of its
 * own), the network between them, a fenced store, and the faults the world can cause.
 */
export class World {
  readonly servers: SimServer[] = [];
  readonly store: FencedStore;
  readonly log: WorldEvent[] = [];
  private readonly links = new Map<SimProcess, Link[]>();
  private readonly deaths = new Map<SimProcess, Array<() => void>>();
  private incarnations = 0;

  constructor(
    readonly sim: Scheduler,
    private readonly seed: number,
    readonly settings: EngineSettings,
    private readonly network: NetworkFaults,
    voters: ReadonlyArray<{ persistence: Persistence; driftPpm: number; replicaLagMs: number }>,
    storeChecksTokens: boolean,
  ) {
    voters.forEach(({ persistence, driftPpm, replicaLagMs }, i) => {
      const process = new SimProcess(`v${i}`);
      const runtime = new ProcessRuntime(sim, process, Random.stream(seed, `v${i}`), {
        offsetMs: 0,
        driftPpm,
      });
      const server = new SimServer(this, i, process, runtime, persistence);
      // Nodes that served before the run: their restart guard has passed (marker '0').
      server.set(KEY_PREFIX + GUARD_MARKER_NAME, '0');
      this.servers.push(server);
      // Redis' active expiry (keys expire on access too): what a step of the clock forward expired
      // is gone within its cycle (expireSoon), also when the clock steps back before an access.
      this.every(process, 1000, () => void server.keys('*'));
      if (persistence === 'everysec') this.every(process, 1000, () => (server.fsynced = server.snapshot()));
      this.every(process, replicaLagMs, () => (server.replica = server.snapshot()));
    });
    this.store = new FencedStore(
      sim,
      new SimProcess('store'),
      Random.stream(seed, 'store'),
      storeChecksTokens,
    );
  }

  /** The busiest link: the most commands one client sent one voter in a simulated second. */
  busiestLink(): { link: string; commands: number } {
    let busiest = { link: '', commands: 0 };
    for (const links of this.links.values())
      for (const link of links)
        if (link.busiestSecond > busiest.commands)
          busiest = { link: `${link.client.name} > ${link.server.name}`, commands: link.busiestSecond };
    return busiest;
  }

  /** The link between a client process and voter `index`. */
  linkOf(client: SimProcess, index: number): Link {
    const link = this.links.get(client)?.[index];
    if (!link) throw new Error(`no link from ${client.name} to v${index}`);
    return link;
  }

  /** Starts a client process in `slot` with a new engine; its wall clock is `offsetMs` off. */
  startClient(slot: number, offsetMs: number): Client {
    const process = new SimProcess(`c${slot}.${this.incarnations++}`);
    const runtime = new ProcessRuntime(this.sim, process, Random.stream(this.seed, process.name), {
      offsetMs,
      driftPpm: 0,
    });
    const links = this.servers.map(
      (s) =>
        new Link(
          this.sim,
          process,
          s.process,
          Random.stream(this.seed, `${process.name}>${s.name}`),
          this.network,
        ),
    );
    this.links.set(process, links);
    const { ttl, nodeTimeout, restartGuard, clockGuard, healHolds, retryDelay, retryJitter } = this.settings;
    const engine = this.sim.as(
      process,
      () =>
        new Redlock({
          nodes: this.servers.map((server, i) => memoryNode(server, { network: links[i]!.network })),
          ttl,
          nodeTimeout,
          restartGuard,
          ...(clockGuard === undefined ? {} : { clockGuard }),
          healHolds,
          retryDelay,
          retryJitter,
          keyPrefix: KEY_PREFIX,
          connectTimeout: 2000,
          runtime,
          logger: silent,
          telemetry: false,
          preflight: 'warn',
        }),
    );
    const connected = this.sim.as(process, () =>
      engine.connect().then(
        () => true,
        () => false,
      ),
    );
    return { slot, process, runtime, engine, connected };
  }

  /** Kills a client process: nothing of it runs again; its subscriptions end with its connections. */
  kill(client: Client): void {
    client.process.dead = true;
    for (const hangUp of this.deaths.get(client.process) ?? []) hangUp();
    this.deaths.delete(client.process);
  }

  /** Registers what ends when `process` dies. */
  onDeath(process: SimProcess, end: () => void): void {
    const list = this.deaths.get(process) ?? [];
    list.push(end);
    this.deaths.set(process, list);
  }

  /** Cuts (or heals) the links of `client` to `voters`, both ways or one. */
  partition(
    client: SimProcess,
    voters: readonly number[],
    cut: boolean,
    direction: 'both' | 'up' | 'down',
  ): void {
    for (const i of voters) this.linkOf(client, i).partition(cut, direction);
  }

  /** Crashes voter `index` (its connections reset); it starts again at once unless `down`. */
  crash(index: number, data: 'none' | 'fsynced' | 'all' | 'replica', down = false): void {
    const server = this.servers[index]!;
    server.stop();
    if (!down) this.restartServer(index, data);
  }

  /** Starts a crashed voter with the data its persistence left. */
  restartServer(index: number, data: 'none' | 'fsynced' | 'all' | 'replica'): void {
    const server = this.servers[index]!;
    if (data === 'all') server.start({ keepData: true });
    else if (data === 'none') server.start({ keepData: false });
    else {
      const image = data === 'fsynced' ? server.fsynced : server.replica;
      server.start(image ? { from: image } : { keepData: false });
    }
  }

  /** Voter `index`'s next active expiry cycle, in `ms` (within 100: after its clock stepped). */
  expireSoon(index: number, ms: number): void {
    const server = this.servers[index]!;
    this.sim.at(this.sim.now + ms, server.process, () => void server.keys('*'));
  }

  note(event: WorldEvent): void {
    this.log.push(event);
  }

  /** Calls `tick` as `process` every `ms` for the rest of the run. */
  private every(process: SimProcess, ms: number, tick: () => void): void {
    const arm = () =>
      this.sim.at(this.sim.now + ms, process, () => {
        tick();
        arm();
      });
    arm();
  }
}
