import { settleWithin, type Runtime } from '../runtime.js';
import { describeError } from '../voter/describe-error.js';
import { ShardSubscribers, type ShardSubscription } from './subscribers.js';
import type { TransportEvent } from './transport.js';

/** A listener of a client's event, as the client calls it. */
type Heard = (...args: unknown[]) => void;
/** What a client emits its events with (Node's EventEmitter, node-redis' clients and clusters). */
export interface Emitter {
  on(event: string, listener: Heard): unknown;
  off(event: string, listener: Heard): unknown;
}

/** The shards of a single server: one, '', that serves no slot of its own. */
export const SINGLE: ReadonlyMap<string, readonly number[]> = new Map([['', []]]);

/** The slots of each master, from a slot table (`masterOf` reads the master of one entry). */
export function slotsByMaster<T>(
  slots: readonly T[],
  masterOf: (entry: T) => string | undefined,
): Map<string, number[]> {
  const bySlot = new Map<string, number[]>();
  slots.forEach((entry, slot) => {
    const master = masterOf(entry);
    if (master === undefined) return;
    const list = bySlot.get(master);
    if (list) list.push(slot);
    else bySlot.set(master, [slot]);
  });
  return bySlot;
}

/**
 * What every client's transport keeps the same way, written once so that a client folder only
 * talks to its client: the voter's listeners, the epochs, up and down told once per change with
 * the last error, our listeners on the client (taken off at close), and the wake subscribers.
 */
export abstract class TransportBase {
  lastError: string | undefined;
  /** Whether 'up' was told last (not 'down'): each change is told once. */
  protected wasUp = false;
  protected readonly subscribers: ShardSubscribers;
  private readonly epochs = new Map<string, number>();
  private readonly listeners: Array<(event: TransportEvent) => void> = [];
  /** Our listeners on the client and its nodes, taken off at close. */
  private attached: Array<[Emitter, string, Heard]> = [];

  constructor(
    readonly label: string,
    readonly clustered: boolean,
    protected readonly runtime: Runtime,
  ) {
    this.subscribers = new ShardSubscribers(
      runtime,
      () => [...this.shards().keys()],
      (shard, channels, deliver) => this.openSubscriber(shard, channels, deliver),
    );
  }

  abstract get up(): boolean;
  abstract shards(): ReadonlyMap<string, readonly number[]>;

  epoch(shard: string): number {
    return this.epochs.get(shard) ?? 0;
  }

  on(listener: (event: TransportEvent) => void): void {
    this.listeners.push(listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Promise<void> {
    return this.subscribers.subscribe(channel, onMessage);
  }

  /** A subscribed connection to `shard` (a subscribed connection can run nothing else). */
  protected abstract openSubscriber(
    shard: string,
    channels: readonly string[],
    deliver: (channel: string, message: string) => void,
  ): Promise<ShardSubscription>;

  /** Whether it is up once `emitter` emitted `event`, or `timeoutMs` passed. */
  protected async upAfter(emitter: Emitter, event: string, timeoutMs: number): Promise<boolean> {
    let heard: (() => void) | undefined;
    const emitted = new Promise<void>((resolve) => emitter.on(event, (heard = () => resolve())));
    await settleWithin(this.runtime, emitted, timeoutMs);
    emitter.off(event, heard!);
    return this.up;
  }

  /** Listens to `emitter` until close (`listener` names the arguments its client passes). */
  protected listen(emitter: Emitter, event: string, listener: (...args: never[]) => void): void {
    emitter.on(event, listener as Heard);
    this.attached.push([emitter, event, listener as Heard]);
  }

  /** Takes our listeners off `emitter` (by default, off everything). */
  protected detach(emitter?: Emitter): void {
    const off = this.attached.filter(([on]) => emitter === undefined || on === emitter);
    this.attached = this.attached.filter((entry) => !off.includes(entry));
    for (const [on, event, listener] of off) on.off(event, listener);
  }

  /** `shard`'s connection may have been replaced: a new epoch, and 'connected' when it is up. */
  protected bump(shard: string, connected: boolean): void {
    this.epochs.set(shard, this.epoch(shard) + 1);
    if (connected) this.emit({ type: 'connected', shard });
  }

  /** Commands can be sent (`shard`, when given, has a new connection). */
  protected markUp(shard?: string): void {
    if (shard !== undefined) this.bump(shard, true);
    this.lastError = undefined;
    if (!this.wasUp) this.emit({ type: 'up' });
    this.wasUp = true;
  }

  /** Commands cannot be sent (`shard`, when given, lost its connection). */
  protected markDown(shard?: string): void {
    if (shard !== undefined) this.bump(shard, false);
    if (this.wasUp) this.emit({ type: 'down', reason: this.lastError ?? 'connection closed' });
    this.wasUp = false;
  }

  /** An error of the client, or of the connection to `shard`. */
  protected failed(err: unknown, shard?: string): void {
    this.lastError = shard === undefined ? describeError(err) : `shard ${shard}: ${describeError(err)}`;
    this.emit({ type: 'error', error: err });
  }

  private emit(event: TransportEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}
