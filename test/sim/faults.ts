import { quorumOf } from '../../lib/core/quorum/voters.js';
import type { FaultKind, RunConfig } from './config.js';
import { Random } from './random.js';
import type { SimProcess } from './scheduler.js';
import type { Client, World } from './world.js';

/** What the fault driver needs of the run: its live clients, and a way to replace a dead one. */
export interface ClientPool {
  live(): readonly Client[];
  /** Starts a new process in the dead client's slot. */
  replace(dead: Client): void;
}

/**
 * The world's faults (issue 37, item 2), drawn from the seed: each kind of the run's mix fires as a
 * Poisson process with its own mean interval until the end of the faulty phase, each fault heals
 * by itself (a partition, a pause, a voter down), and at the end everything still broken heals.
 *
 * The assumptions (unless a control drops them): the faults that lose a voter's state (a crash
 * without persistence or with AOF everysec, a failover, FLUSHALL) and the forward steps of voters'
 * clocks hit at most a minority of the voters within any window of restartGuard + 2 ttl, together
 * (a voter that stepped forward seeds tokens ahead, and the marking that follows drops its fence
 * counters: a state loss of its own); a fault that would break that is not made.
 */
export class FaultDriver {
  private readonly quorum: number;
  private readonly window: number;
  /** When each voter last lost its state / stepped forward. */
  private readonly lostAt: number[];
  private readonly steppedAt: number[];
  private readonly healers = new Set<() => void>();
  /** Per voter: how far its clock was stepped in all, ms (NTP steps it back at the end). */
  private readonly stepped: number[];
  /** The largest step back made, ms (the liveness bound allows for it). */
  maxBackStepMs = 0;
  made = 0;

  constructor(
    private readonly world: World,
    private readonly config: RunConfig,
    private readonly seed: number,
    private readonly clients: ClientPool,
  ) {
    const voters = config.voters.length;
    this.quorum = quorumOf(voters);
    const { ttl, restartGuard } = config.settings;
    this.window = (restartGuard === false ? ttl : restartGuard) + 2 * ttl;
    this.lostAt = new Array<number>(voters).fill(-Infinity);
    this.stepped = new Array<number>(voters).fill(0);
    this.steppedAt = config.options.separateBudgets ? new Array<number>(voters).fill(-Infinity) : this.lostAt;
  }

  /** Schedules the faults of the run's mix, and the healing of everything at `end`. */
  start(end: number): void {
    const { sim } = this.world;
    for (const [kind, meanMs] of this.config.faults) {
      if (kind === 'delay' || kind === 'drop' || kind === 'drift' || kind === 'aof') continue; // in the network / voters
      const rng = Random.stream(this.seed, `faults:${kind}`);
      const next = () =>
        sim.at(sim.now + rng.exponential(meanMs), this.world.sim.world, () => {
          if (sim.now >= end) return;
          this.made++;
          this.make(kind, rng);
          next();
        });
      next();
    }
    sim.at(end, this.world.sim.world, () => {
      for (const heal of [...this.healers]) heal();
      this.syncClocks();
      this.world.note({ at: sim.now, what: 'every fault healed' });
    });
  }

  private make(kind: FaultKind, rng: Random): void {
    const { world } = this;
    const { ttl } = this.config.settings;
    const voters = this.config.voters.length;
    const now = world.sim.now;
    switch (kind) {
      case 'partition':
      case 'asymmetric': {
        const live = this.clients.live();
        if (live.length === 0) return;
        const who = rng.chance(0.3) ? live : [rng.pick(live)];
        const cut = this.someVoters(rng, rng.int(1, voters));
        const direction = kind === 'partition' ? 'both' : rng.pick(['up', 'down'] as const);
        const forMs = rng.between(0.1, 3) * ttl;
        for (const c of who) world.partition(c.process, cut, true, direction);
        this.note(
          `${kind === 'partition' ? 'partition' : `cut ${direction}`} ${who.map((c) => c.process.name).join('+')} from`,
          cut,
          forMs,
        );
        this.healAfter(forMs, () => {
          for (const c of who) if (!c.process.dead) world.partition(c.process, cut, false, direction);
        });
        return;
      }
      case 'crash': {
        const v = this.stateLossCandidate(rng, rng.int(0, voters - 1));
        if (v === undefined) return;
        const server = world.servers[v]!;
        if (!server.up) return;
        const data =
          server.persistence === 'always' ? 'all' : server.persistence === 'everysec' ? 'fsynced' : 'none';
        if (data !== 'all') this.lostAt[v] = now;
        const down = rng.chance(0.5) ? 0 : rng.between(0, 2) * ttl;
        world.crash(v, data, down > 0);
        this.note(
          `crash (${server.persistence === 'none' ? 'no persistence' : `AOF ${server.persistence}`})`,
          [v],
          down,
        );
        if (down > 0) this.healAfter(down, () => world.restartServer(v, data));
        return;
      }
      case 'failover': {
        const v = this.stateLossCandidate(rng, rng.int(0, voters - 1));
        if (v === undefined || !world.servers[v]!.up) return;
        this.lostAt[v] = now;
        const promotion = rng.between(0.2, 2) * ttl;
        world.crash(v, 'replica', true);
        this.note('failover to a lagging replica', [v], promotion);
        this.healAfter(promotion, () => world.restartServer(v, 'replica'));
        return;
      }
      case 'flush': {
        const v = this.stateLossCandidate(rng, rng.int(0, voters - 1));
        if (v === undefined || !world.servers[v]!.up) return;
        this.lostAt[v] = now;
        world.servers[v]!.flushAll();
        this.note('FLUSHALL', [v]);
        return;
      }
      case 'stop': {
        const v = rng.int(0, voters - 1);
        const server = world.servers[v]!;
        const forMs = rng.between(0.05, 2) * ttl;
        this.pause(server.process, forMs);
        this.note('stopped (SIGSTOP)', [v], forMs);
        return;
      }
      case 'clock': {
        const guard = this.config.settings.clockGuard;
        const scale = Math.exp(rng.between(Math.log(50), Math.log(4 * ttl)));
        let v = rng.int(0, voters - 1);
        if (rng.chance(0.6)) {
          const chosen = this.assumed(rng, this.steppedAt, v);
          if (chosen === undefined) return;
          v = chosen;
          this.steppedAt[v] = now;
          world.servers[v]!.stepClock(scale);
          this.stepped[v]! += scale;
          world.expireSoon(v, rng.between(0, 100));
          this.note(`clock +${Math.round(scale)} ms`, [v]);
        } else {
          world.servers[v]!.stepClock(-scale);
          this.stepped[v]! -= scale;
          this.maxBackStepMs = Math.max(this.maxBackStepMs, scale);
          this.note(`clock -${Math.round(scale)} ms`, [v]);
        }
        void guard;
        return;
      }
      case 'pause': {
        const live = this.clients.live();
        if (live.length === 0) return;
        const c = rng.pick(live);
        const forMs = rng.chance(0.5) ? rng.between(1, 3) * ttl : rng.between(0.01, 1) * ttl;
        this.pause(c.process, forMs);
        this.note(`${c.process.name} paused`, [], forMs);
        return;
      }
      case 'client-crash': {
        const live = this.clients.live();
        if (live.length === 0) return;
        const c = rng.pick(live);
        world.kill(c);
        const after = rng.between(0, 2) * ttl;
        this.note(`${c.process.name} crashed`, [], after);
        this.healAfter(after, () => this.clients.replace(c));
        return;
      }
      default:
        return;
    }
  }

  /** A voter that may lose its state now: `v`, or one that lost it lately, or none. */
  private stateLossCandidate(rng: Random, v: number): number | undefined {
    return this.assumed(rng, this.lostAt, v);
  }

  /**
   * Keeps `at` (the times of a kind of fault per voter) to a minority within the window: `v` when
   * that holds with it, else a voter already hit within the window (a second hit changes nothing),
   * else none. Without the assumptions (a control), `v`.
   */
  private assumed(rng: Random, at: number[], v: number): number | undefined {
    if (!this.config.assumptions) return v;
    const since = this.world.sim.now - this.window;
    const recent = at.flatMap((t, i) => (t > since ? [i] : []));
    if (recent.includes(v) || recent.length + 1 < this.quorum) return v;
    return recent.length > 0 ? rng.pick(recent) : undefined;
  }

  private someVoters(rng: Random, count: number): number[] {
    const all = this.config.voters.map((_, i) => i);
    for (let i = all.length - 1; i > 0; i--) {
      const j = rng.int(0, i);
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    return all.slice(0, count).sort((a, b) => a - b);
  }

  private pause(process: SimProcess, forMs: number): void {
    process.pausedUntil = Math.max(process.pausedUntil, this.world.sim.now + forMs);
  }

  /**
   * The heal of the clock steps: NTP steps every voter's clock back to the time (drift stays). An
   * offset is a fault like any other: a voter whose clock stays ahead of the voters' median by more
   * than the clock guard never counts (ClockGuard), so liveness holds once the clocks agree again;
   * a voter stepped back to the time is a step forward, excluded for the restart guard (the bound).
   */
  private syncClocks(): void {
    this.stepped.forEach((ms, v) => {
      if (ms === 0) return;
      this.world.servers[v]!.stepClock(-ms);
      this.stepped[v] = 0;
      if (ms > 0) this.maxBackStepMs = Math.max(this.maxBackStepMs, ms);
      this.world.expireSoon(v, 0);
      this.note(`clock ${ms > 0 ? '-' : '+'}${Math.round(Math.abs(ms))} ms (NTP)`, [v]);
    });
  }

  private healAfter(ms: number, heal: () => void): void {
    const once = () => {
      if (!this.healers.delete(once)) return;
      heal();
    };
    this.healers.add(once);
    this.world.sim.at(this.world.sim.now + ms, this.world.sim.world, once);
  }

  private note(what: string, voters: readonly number[], forMs?: number): void {
    this.world.note({
      at: this.world.sim.now,
      what: voters.length ? `${what} ${voters.join(',')}` : what,
      voters,
      ...(forMs ? { forMs } : {}),
    });
  }
}
