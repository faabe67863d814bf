import type { Runtime } from '../../runtime.js';

/** A socket that can hold its writes back and send them in one syscall (a net.Socket). */
export interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Batching one connection's writes per tick. ioredis writes each command to its socket at once:
 * with many locks taken at once, a syscall per command on both sides, each waking the other process.
 * Commands sent in one tick should leave in one write; but a lone command, a sequential caller's
 * usual case, gains nothing from waiting for the end of the tick, and a corked write costs Node's
 * stream more. So the socket is corked only when commands come in batches: from a tick's second
 * command, or from its first when the last tick this connection was used in had more than one
 * (steady load). It is uncorked at the end of the tick (the runtime's `endOfTick`: after the promise
 * continuations, before the event loop reads replies or fires timers).
 */
export class WriteBatcher {
  /** A tick is open: its end is scheduled. */
  private open = false;
  private commands = 0;
  private lastCommands = 0;
  private corked: Corkable | undefined;
  private written: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(private readonly runtime: Runtime) {}

  /** Called right before each command is written to `stream` (undefined: no socket to cork). */
  beforeWrite(stream: Corkable | undefined): void {
    if (!this.open) {
      this.open = true;
      this.lastCommands = this.commands;
      this.commands = 0;
      this.runtime.endOfTick(this.close);
    }
    this.commands++;
    if (this.corked !== undefined || stream === undefined) return;
    if (this.commands === 1 && this.lastCommands <= 1) return; // a lone caller's command: out at once
    stream.cork();
    this.corked = stream;
  }

  /** Resolves once the commands written so far have left for the socket; undefined: they have. */
  pending(): Promise<void> | undefined {
    if (this.corked === undefined) return undefined;
    if (!this.written) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.written = { promise, resolve };
    }
    return this.written.promise;
  }

  private readonly close = (): void => {
    this.open = false;
    const stream = this.corked;
    this.corked = undefined;
    stream?.uncork();
    const written = this.written;
    this.written = undefined;
    written?.resolve();
  };
}
