import type { Random } from './random.js';
import type { Scheduler, SimProcess } from './scheduler.js';

/**
 * The simulated fenced store: a register per resource, fenced as the fault suite's store is
 * (test/faults/worker.mjs): `seen` is the highest token that read or wrote it, `written` the last
 * accepted write's. A read below `seen` is refused; a write is accepted only above `written` and
 * at least `seen`. It never fails; each request and its answer cross a short delay, and the answer
 * reaches a paused client when it resumes. `checksTokens: false` (the fencing control) accepts all.
 */
export class FencedStore {
  private readonly registers = new Map<string, { value: number; seen: number; written: number }>();

  constructor(
    private readonly sim: Scheduler,
    readonly process: SimProcess,
    private readonly rng: Random,
    private readonly checksTokens: boolean,
  ) {}

  /** The value of every register (the final counters). */
  values(): Record<string, number> {
    return Object.fromEntries([...this.registers].map(([resource, r]) => [resource, r.value]));
  }

  read(client: SimProcess, resource: string, token: number): Promise<{ ok: boolean; value: number }> {
    return this.call(client, () => {
      const r = this.register(resource);
      if (this.checksTokens && token < r.seen) return { ok: false, value: r.value };
      r.seen = Math.max(r.seen, token);
      return { ok: true, value: r.value };
    });
  }

  write(client: SimProcess, resource: string, token: number, value: number): Promise<boolean> {
    return this.call(client, () => {
      const r = this.register(resource);
      if (this.checksTokens && (token < r.seen || token <= r.written)) return false;
      r.value = value;
      r.seen = Math.max(r.seen, token);
      r.written = token;
      return true;
    });
  }

  private register(resource: string) {
    let r = this.registers.get(resource);
    if (!r) this.registers.set(resource, (r = { value: 0, seen: 0, written: 0 }));
    return r;
  }

  private call<T>(client: SimProcess, apply: () => T): Promise<T> {
    return new Promise((resolve) => {
      this.sim.at(this.sim.now + this.rng.between(0.05, 1), this.process, () => {
        const answer = apply();
        this.sim.at(this.sim.now + this.rng.between(0.05, 1), client, () => resolve(answer));
      });
    });
  }
}
