/**
 * What the dashboard's server-sent events carry (the `data` of each message, as JSON). The page
 * (dashboard-page.ts) renders exactly these shapes; the SSE event name is the message's `kind`.
 */

/** One voter as the page shows it. */
export interface NodeView {
  /** The node's log-safe label (host:port). */
  readonly node: string;
  readonly state: 'up' | 'down' | 'abstaining';
  /** PING round trip of the last probe, ms. */
  readonly latencyMs: number | null;
  /** Epoch ms until which the node abstains (state `abstaining`). */
  readonly abstainingUntil: number | null;
  /** Why it is down, as the library reported it. */
  readonly reason: string | null;
}

/** One account's lock as the page shows it. */
export interface AccountView {
  readonly account: string;
  /** Whether a majority of the voters says someone holds it. */
  readonly held: boolean;
  /** Who holds it now: this instance's name, `another instance`, or null when free. */
  readonly holder: string | null;
  /** Who held it last as far as this instance knows (survives the release). */
  readonly lastHolder: string | null;
  /** The holder's token, or the last token issued for the account. */
  readonly fencingToken: number | null;
  /** When the lock frees on a majority, ms from the last look. */
  readonly ttlMs: number | null;
}

/** What the recent-activity list shows for one lock or application event. */
export interface ActivityEntry {
  /** Epoch ms. */
  readonly at: number;
  readonly kind: 'granted' | 'busy' | 'unavailable' | 'released' | 'lost' | 'stale-rejected';
  /** The lock's resources (`account:alice`), or the account key of a stale write. */
  readonly resource: string;
  readonly fencingToken: number | null;
  /** Acquire wait or hold time, ms. */
  readonly durationMs: number | null;
  /** Detail: why a lock was lost, which stage of a stale access was refused. */
  readonly detail: string | null;
}

/** Totals of account-lock outcomes since this instance started. */
export interface ActivityCounts {
  granted: number;
  refused: number;
  staleRejected: number;
}

/** Sent once when a page connects: the state so far. */
export interface SnapshotMessage {
  readonly kind: 'snapshot';
  readonly instance: string;
  readonly recent: readonly ActivityEntry[];
  readonly counts: ActivityCounts;
}

/** Sent every second: the voters as a probe found them and each account's lock. */
export interface StatusMessage {
  readonly kind: 'status';
  readonly at: number;
  readonly quorum: number;
  readonly quorumReachable: boolean;
  readonly nodes: readonly NodeView[];
  readonly accounts: readonly AccountView[];
}

/** Sent as it happens: a lock or application event, with the account it changed. */
export interface ActivityMessage {
  readonly kind: 'activity';
  readonly entry: ActivityEntry;
  readonly counts: ActivityCounts;
  readonly account: AccountView;
}

/** Sent as it happens: a node went down, came back or started abstaining. */
export interface NodeMessage {
  readonly kind: 'node';
  readonly node: NodeView;
}

export type DashboardMessage = SnapshotMessage | StatusMessage | ActivityMessage | NodeMessage;
