import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { LockService, type LockEvent } from 'nest-quorum-lock';
import {
  catchError,
  concat,
  EMPTY,
  from,
  defer,
  exhaustMap,
  merge,
  Observable,
  of,
  Subject,
  takeUntil,
  timer,
  type Subscription,
} from 'rxjs';
import { AppEvents, type AppEvent } from '../app-events.js';
import type { SampleConfig } from '../config.js';
import { SAMPLE_CONFIG } from '../tokens.js';
import { ActivityLog } from './activity-log.js';
import { lookAtCluster } from './cluster-look.js';
import type { DashboardMessage, NodeMessage } from './messages.js';

/** How often a connected page gets a fresh look at the voters and the account locks. */
export const STATUS_INTERVAL_MS = 1000;

/**
 * The dashboard's data: the library's lock and node events merged with the application's own
 * (stale writes the database refused), remembered in an {@link ActivityLog} from start-up, plus
 * a periodic look at the cluster for each connected page.
 */
@Injectable()
export class DashboardFeed implements OnModuleInit, OnModuleDestroy {
  private readonly log: ActivityLog;
  private readonly live = new Subject<DashboardMessage>();
  private readonly closing = new Subject<void>();
  private subscription: Subscription | undefined;

  constructor(
    private readonly locks: LockService,
    private readonly appEvents: AppEvents,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {
    this.log = new ActivityLog(config.instance);
  }

  /** Listens from start-up, not from the first page: the page shows what happened before it opened. */
  onModuleInit(): void {
    this.subscription = merge<Array<LockEvent | AppEvent>>(
      this.locks.events$,
      this.appEvents.events$,
    ).subscribe((event) => this.record(event));
  }

  /** Ends every page's stream, so that open SSE responses do not hold the HTTP server open. */
  onModuleDestroy(): void {
    this.closing.next();
    this.subscription?.unsubscribe();
  }

  /** One page's stream: the state so far, then live events and a look at the cluster every second. */
  stream(): Observable<DashboardMessage> {
    const snapshot = defer(() =>
      of<DashboardMessage>({
        kind: 'snapshot',
        instance: this.config.instance,
        recent: [...this.log.recent],
        counts: { ...this.log.counts },
      }),
    );
    // exhaustMap: a look slowed by a hung node is not stacked with the next one; a look that fails
    // is skipped, as an error would end the page's stream.
    const looks = timer(0, STATUS_INTERVAL_MS).pipe(
      exhaustMap(() => from(lookAtCluster(this.locks, this.log)).pipe(catchError(() => EMPTY))),
    );
    return concat(snapshot, merge(this.live, looks)).pipe(takeUntil(this.closing));
  }

  private record(event: LockEvent | AppEvent): void {
    if (event.type === 'node-down' || event.type === 'node-up' || event.type === 'node-abstaining') {
      this.live.next(nodeMessage(event));
      return;
    }
    const recorded = this.log.record(event);
    if (!recorded) return;
    this.live.next({
      kind: 'activity',
      entry: recorded.entry,
      counts: { ...this.log.counts },
      account: this.log.view(recorded.account),
    });
  }
}

/** A node event as the page shows it, before the next probe measures the node again. */
function nodeMessage(event: LockEvent): NodeMessage {
  const abstaining = event.type === 'node-abstaining';
  return {
    kind: 'node',
    node: {
      node: event.node ?? '?',
      state: abstaining ? 'abstaining' : event.type === 'node-up' ? 'up' : 'down',
      latencyMs: null,
      abstainingUntil: abstaining ? Date.now() + (event.durationMs ?? 0) : null,
      reason: event.reason ?? null,
    },
  };
}
