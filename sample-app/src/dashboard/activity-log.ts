import type { LockEvent, LockInspection } from 'nest-quorum-lock';
import type { AppEvent } from '../app-events.js';
import type { AccountView, ActivityCounts, ActivityEntry } from './messages.js';

/** Lock keys of accounts, as AccountsService names them (`@DistributedLock('account:{0}')`). */
const ACCOUNT_PREFIX = 'account:';

/** What this instance knows of one account's lock from its own events. */
interface LocalLock {
  /** Token of the lock this instance holds now, null when it holds none. */
  holding: number | null;
  /** Last token this instance saw granted. */
  lastToken: number | null;
  /** Last majority view from `inspect()`, kept so live updates do not lose the ttl. */
  inspection: LockInspection | null;
}

/**
 * The dashboard's memory: the last {@link size} lock and application events as list entries,
 * running totals, and per account whether this instance holds its lock. Kept on the server so a
 * page opened after the action (the demo's load lasts seconds) still shows what happened.
 * Events only tell what THIS instance did: locks other instances hold come from `inspect()`.
 */
export class ActivityLog {
  private readonly entries: ActivityEntry[] = [];
  private readonly locks = new Map<string, LocalLock>();
  readonly counts: ActivityCounts = { granted: 0, refused: 0, staleRejected: 0 };

  constructor(
    /** This instance's name, shown as the holder of the locks it takes. */
    private readonly instance: string,
    private readonly size = 50,
  ) {}

  /** Most recent first. */
  get recent(): readonly ActivityEntry[] {
    return this.entries;
  }

  /** Accounts whose lock this instance has seen, for `inspect()`. */
  get accounts(): string[] {
    return [...this.locks.keys()];
  }

  /**
   * Records a lock or application event; returns its list entry and the account it concerns,
   * or null for what the list does not show (node events, watchdog extensions, other locks).
   */
  record(event: LockEvent | AppEvent, at = Date.now()): { entry: ActivityEntry; account: string } | null {
    if (event.type === 'stale-rejected') {
      this.counts.staleRejected++;
      this.lock(event.account);
      const entry = this.push({
        at,
        kind: 'stale-rejected',
        resource: ACCOUNT_PREFIX + event.account,
        fencingToken: event.fencingToken,
        durationMs: null,
        detail: `fenced ${event.stage} refused`,
      });
      return { entry, account: event.account };
    }
    const kind = KINDS[event.type];
    const account = accountOf(event.resources);
    // Account locks only: the settlement job's lock, taken every few seconds, would drown them.
    if (!kind || account === null) return null;
    const token = event.fencingToken ?? null;
    this.follow(this.lock(account), event.type, token);
    if (kind === 'granted') this.counts.granted++;
    if (kind === 'busy' || kind === 'unavailable') this.counts.refused++;
    const entry = this.push({
      at,
      kind,
      resource: event.resources.join(', '),
      fencingToken: token,
      durationMs: event.durationMs === undefined ? null : Math.round(event.durationMs),
      detail: event.reason ?? null,
    });
    return { entry, account };
  }

  /** Remembers the majority's view of `account` (from the periodic `inspect()`). */
  inspected(account: string, inspection: LockInspection | null): void {
    this.lock(account).inspection = inspection;
  }

  /** The account's lock as the page shows it: this instance's events first, the majority's view after. */
  view(account: string): AccountView {
    const { holding, lastToken, inspection } = this.lock(account);
    const majorityToken = inspection?.fencingToken ?? null;
    // A majority token above the last one granted here means another instance took it since.
    const newerElsewhere = majorityToken !== null && (lastToken === null || majorityToken > lastToken);
    const heldElsewhere = holding === null && inspection?.held === true;
    return {
      account,
      held: holding !== null || heldElsewhere,
      holder: holding !== null ? this.instance : heldElsewhere ? 'another instance' : null,
      lastHolder:
        lastToken === null && !newerElsewhere ? null : newerElsewhere ? 'another instance' : this.instance,
      fencingToken: holding ?? max(lastToken, majorityToken),
      ttlMs: inspection?.ttlMs ?? null,
    };
  }

  private follow(lock: LocalLock, type: LockEvent['type'], token: number | null): void {
    if (type === 'acquired') {
      lock.holding = token;
      lock.lastToken = max(lock.lastToken, token);
    } else if ((type === 'released' || type === 'lost') && lock.holding === token) {
      lock.holding = null;
    }
  }

  private lock(account: string): LocalLock {
    let lock = this.locks.get(account);
    if (!lock) this.locks.set(account, (lock = { holding: null, lastToken: null, inspection: null }));
    return lock;
  }

  private push(entry: ActivityEntry): ActivityEntry {
    this.entries.unshift(entry);
    if (this.entries.length > this.size) this.entries.length = this.size;
    return entry;
  }
}

/** The list's name for each lock event it shows; extensions (every ttl/3 per lock) would drown it. */
const KINDS: Partial<Record<LockEvent['type'], ActivityEntry['kind']>> = {
  acquired: 'granted',
  busy: 'busy',
  unavailable: 'unavailable',
  released: 'released',
  lost: 'lost',
};

/** The account a lock is on, if it is an account lock. */
function accountOf(resources: readonly string[]): string | null {
  const key = resources.find((r) => r.startsWith(ACCOUNT_PREFIX));
  return key === undefined ? null : key.slice(ACCOUNT_PREFIX.length);
}

function max(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}
