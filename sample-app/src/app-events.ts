import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';

/**
 * Something the application saw that the lock library cannot: the accounts' database refused a
 * fenced read or write because a newer lock holder had already touched the account.
 */
export interface StaleWriteRejected {
  readonly type: 'stale-rejected';
  /** The account whose row refused the access. */
  readonly account: string;
  /** The fencing token the refused access carried. */
  readonly fencingToken: number;
  /** `read`: a newer holder had read the account first; `write`: the balance write was refused. */
  readonly stage: 'read' | 'write';
}

/** The application's own events (today only {@link StaleWriteRejected}). */
export type AppEvent = StaleWriteRejected;

/**
 * The application's event bus: services report what happened, the dashboard listens. A plain
 * Subject, so reporting costs nothing while no one listens and never throws into the caller.
 */
@Injectable()
export class AppEvents implements OnApplicationShutdown {
  private readonly subject = new Subject<AppEvent>();
  readonly events$: Observable<AppEvent> = this.subject.asObservable();

  emit(event: AppEvent): void {
    this.subject.next(event);
  }

  onApplicationShutdown(): void {
    this.subject.complete();
  }
}
