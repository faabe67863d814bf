import { ConnectionDropped, type MemoryNetwork } from '../../lib/testing/index.js';
import type { Random } from './random.js';
import type { Scheduler, SimProcess } from './scheduler.js';

/** How one run's network misbehaves (drawn per run: see faults.ts). */
export interface NetworkFaults {
  /** Delay of an ordinary packet, ms (uniform in the range). */
  readonly baseDelayMs: readonly [number, number];
  /** Share of packets that are slow: delayed up to `slowDelayMs` (head-of-line: later ones wait). */
  readonly slowShare: number;
  readonly slowDelayMs: number;
  /** Share of commands whose connection drops on arrival (half of them after the command ran). */
  readonly dropShare: number;
}

export const QUIET_NETWORK: NetworkFaults = {
  baseDelayMs: [0.05, 0.3],
  slowShare: 0,
  slowDelayMs: 0,
  dropShare: 0,
};

/** What crosses a channel: delivered at `readyAt` (or later: behind a slower one, after a cut). */
interface Packet {
  readyAt: number;
  deliver(): void;
}

/**
 * One direction of one TCP connection: packets arrive in the order they were sent (a slow one holds
 * up those behind it), each at its process (a paused one takes it when it resumes). Cut (a
 * partition), it holds them all and delivers them after it heals, at the next retransmission.
 */
export class Channel {
  private queue: Array<Packet | undefined> = [];
  private head = 0;
  private armed = false;
  private lastAt = 0;
  /** Partitions over this direction now: nothing is delivered while there is one. */
  private cuts = 0;

  constructor(
    private readonly sim: Scheduler,
    private readonly owner: SimProcess,
  ) {}

  send(delayMs: number, deliver: () => void): void {
    this.sendPacket({ readyAt: 0, deliver }, delayMs);
  }

  /** Sends `packet` (its `readyAt` set here). */
  sendPacket(packet: Packet, delayMs: number): void {
    packet.readyAt = this.sim.now + delayMs;
    this.queue.push(packet);
    this.arm();
  }

  /**
   * Cuts (true) or heals (false) this direction; cuts nest (two partitions over one link end when
   * both healed); a heal resumes after `retransmitMs` (TCP's next retransmission).
   */
  setCut(cut: boolean, retransmitMs = 0): void {
    this.cuts += cut ? 1 : -1;
    if (this.cuts === 0) {
      this.lastAt = Math.max(this.lastAt, this.sim.now + retransmitMs);
      this.arm();
    }
  }

  get isCut(): boolean {
    return this.cuts > 0;
  }

  private arm(): void {
    if (this.armed || this.cuts > 0 || this.head >= this.queue.length) return;
    this.armed = true;
    const packet = this.queue[this.head]!;
    this.sim.at(Math.max(packet.readyAt, this.lastAt), this.owner, this.deliverHead);
  }

  private readonly deliverHead = (): void => {
    this.armed = false;
    if (this.cuts > 0) return;
    const packet = this.queue[this.head]!;
    this.queue[this.head++] = undefined;
    if (this.head > 256 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    this.lastAt = this.sim.now;
    packet.deliver();
    this.arm();
  };
}

/** A command waiting for its reply. */
interface Pending {
  readonly reject: (err: unknown) => void;
  settled: boolean;
}

/**
 * One command's round trip, as one object: the packet up (it arrives: {@link Link.arrived}), then
 * the packet down with its reply ({@link Link.answered}); no closure per hop.
 */
class Flight implements Packet, Pending {
  readyAt = 0;
  settled = false;
  /** Up (0) or down with the reply (1). */
  leg = 0;
  reply: unknown = undefined;
  failed = false;
  resolve!: (value: unknown) => void;
  reject!: (err: unknown) => void;

  constructor(
    private readonly link: Link,
    readonly generation: number,
    readonly arrive: () => unknown,
  ) {}

  deliver(): void {
    if (this.leg === 0) this.link.arrived(this);
    else this.link.answered(this);
  }
}

/**
 * The network between one client and one voter: a command connection (commands up, replies and
 * connection news down) and a subscriber connection (messages down). Its {@link network} is the
 * in-memory transport's hook. A reset (a dropped connection, the server's crash) loses the commands
 * not yet arrived: their callers hear "Connection is closed" after the replies already on their way.
 */
export class Link {
  readonly up: Channel;
  readonly down: Channel;
  readonly messages: Channel;
  /** Commands sent and not yet answered, by the generation of the connection they went on. */
  private pending = new Set<Pending>();
  /** The connection was reset and the client has not heard yet: what it sends now is lost. */
  private broken = false;
  private generation = 0;
  /** The most commands sent in one second of simulated time (a client flooding a voter). */
  busiestSecond = 0;
  private second = 0;
  private sentThisSecond = 0;

  constructor(
    private readonly sim: Scheduler,
    readonly client: SimProcess,
    readonly server: SimProcess,
    private readonly rng: Random,
    private readonly faults: NetworkFaults,
  ) {
    this.up = new Channel(sim, server);
    this.down = new Channel(sim, client);
    this.messages = new Channel(sim, client);
  }

  /** A delay drawn for one packet. */
  delay(): number {
    const { baseDelayMs, slowShare, slowDelayMs } = this.faults;
    if (slowShare > 0 && this.rng.chance(slowShare)) return this.rng.between(0, slowDelayMs);
    return this.rng.between(baseDelayMs[0], baseDelayMs[1]);
  }

  /** Cuts or heals the link, both ways or one. */
  partition(cut: boolean, direction: 'both' | 'up' | 'down' = 'both'): void {
    const retransmit = () => this.rng.between(0, 400);
    if (direction !== 'down') this.up.setCut(cut, retransmit());
    if (direction !== 'up') {
      this.down.setCut(cut, retransmit());
      this.messages.setCut(cut, retransmit());
    }
  }

  /**
   * The connection resets (the server crashed, or the network dropped it): commands not yet arrived
   * are lost; the client hears it after what is already on its way down, through `tell` (the
   * transport's own notice), then the lost commands fail.
   */
  reset(tell: () => void): void {
    this.generation++;
    this.broken = true;
    const lost = [...this.pending];
    this.pending = new Set();
    this.down.send(this.delay(), () => {
      this.broken = false;
      tell();
      for (const p of lost) fail(p, new Error('Connection is closed.'));
    });
  }

  /** News of the connection for the client (the server stopped or started), in order with replies. */
  notify(news: () => void): void {
    this.down.send(this.delay(), news);
  }

  /** The in-memory transport's network hook for this link. */
  readonly network: MemoryNetwork = (_server, command, arrive) => {
    if (command[0] === 'message') {
      this.messages.send(this.delay(), arrive);
      // A message has no reply. A promise of its own that never settles: the transport's `.catch`
      // on one shared never-settled promise would pile up for the whole process, each holding the
      // run's world (9-12 MB a run).
      return new Promise(() => undefined);
    }
    if (this.sim.now - this.second >= 1000) [this.second, this.sentThisSecond] = [this.sim.now, 0];
    if (++this.sentThisSecond > this.busiestSecond) this.busiestSecond = this.sentThisSecond;
    const flight = new Flight(this, this.generation, arrive);
    const reply = new Promise((resolve, reject) => {
      flight.resolve = resolve;
      flight.reject = reject;
    });
    if (this.broken) {
      // Written to a connection that is gone: it fails once the client hears of the reset.
      this.down.send(this.delay(), () => fail(flight, new Error('Connection is closed.')));
      return reply;
    }
    this.pending.add(flight);
    this.up.sendPacket(flight, this.delay());
    return reply;
  };

  /** A command reached the server: it runs (or the connection drops first, or after it). */
  arrived(flight: Flight): void {
    if (this.generation !== flight.generation || flight.settled) return; // lost in a reset
    const drop = this.faults.dropShare > 0 && this.rng.chance(this.faults.dropShare);
    const ranFirst = drop && this.rng.chance(0.5);
    if (!drop || ranFirst) {
      try {
        flight.reply = flight.arrive();
      } catch (err) {
        flight.reply = err;
        flight.failed = true;
      }
    }
    if (drop) {
      this.pending.delete(flight);
      this.reset(() => fail(flight, new ConnectionDropped()));
      return;
    }
    flight.leg = 1;
    this.down.sendPacket(flight, this.delay());
  }

  /** Its reply reached the client. */
  answered(flight: Flight): void {
    if (flight.settled) return;
    flight.settled = true;
    this.pending.delete(flight);
    if (flight.failed) flight.reject(flight.reply);
    else flight.resolve(flight.reply);
  }
}

function fail(pending: Pending, err: unknown): void {
  if (pending.settled) return;
  pending.settled = true;
  pending.reject(err);
}
