import { NodeConfigurationError } from './errors.js';
import type { RedlockLogger } from './logger.js';

/**
 * What preflight does with a node that breaks Redlock's assumptions (see voter/ioredis/preflight.ts for Redis):
 * `'error'` keeps it from voting and makes `connect()` (the module's bootstrap) reject with a
 * `NodeConfigurationError`; `'warn'` logs and lets it vote; `'off'` checks nothing.
 */
export type PreflightMode = 'error' | 'warn' | 'off';

/** What a voter found out about its server on a new connection. */
export interface ServerReport {
  /** An id of the server process (Redis: run_id), to spot one server behind two addresses. */
  readonly serverId?: string;
  /**
   * Which server software and version answers, as INFO says (`Redis 7.4.1`, `Valkey 8.0.1`; a
   * shard of a Cluster). Names the kind of server in the duplicate-server error.
   */
  readonly server?: string;
  /** What the voter's own checks found (voter/ioredis/preflight.ts for Redis). */
  readonly findings: ReadonlyArray<{ severity: 'error' | 'notice'; problem: string; fix: string }>;
}

/**
 * The engine-wide side of preflight, voter-agnostic: every voter reports what its server said of
 * itself on a new connection (voter/ioredis/preflight.ts reads and checks a Redis server), and this
 * decides whether it
 * may vote, spots one server listed twice (equal run_id behind two addresses), and keeps what it
 * found for `Redlock.connect()`, which rejects with it under `'error'`.
 *
 * A node that is down at bootstrap is reviewed when it first connects: under `'error'` a node that
 * fails never votes, and since the bootstrap has passed, the error is logged (loudly) instead.
 */
export class Preflight {
  /** Per voter: the run_id of its server and its label, for the duplicate check. */
  private readonly servers = new Map<object, { label: string; runId: string }>();
  /** Per voter: the errors of its latest review. */
  private readonly found = new Map<object, { owner: object; errors: NodeConfigurationError[] }>();
  /** Per voter, under 'warn': the problems its latest review logged. */
  private readonly warned = new Map<object, ReadonlySet<string>>();
  private bootstrapped = false;

  constructor(
    readonly mode: Exclude<PreflightMode, 'off'>,
    private readonly logger: RedlockLogger,
  ) {}

  /**
   * Reviews `voter`'s server (on each new connection). Logs what it found (notices always, errors
   * under 'warn', and under 'error' once the bootstrap has passed). Returns the refusal (the
   * voter must not vote) under 'error', else undefined.
   */
  review(
    key: object,
    voter: object,
    label: string,
    report: ServerReport,
  ): NodeConfigurationError | undefined {
    const findings = [...report.findings];
    const runId = report.serverId;
    const twin = runId && this.twinOf(key, runId);
    if (runId) this.servers.set(key, { label, runId });
    if (twin) {
      const kind = report.server?.startsWith('Valkey') ? 'Valkey' : 'Redis';
      // The same address twice in `nodes` has no other name to point at.
      const same = twin === label ? `listed twice in nodes` : `the same ${kind} server as ${twin}`;
      findings.push({
        severity: 'error',
        problem:
          `it is ${same} (run_id ${runId}): one server listed twice (two host names or addresses, or ` +
          'the same one) counts twice toward the majority, so fewer real servers than a quorum can grant a lock',
        fix: 'list every server once; a majority must be of independent servers',
      });
    }
    for (const f of findings.filter((f) => f.severity === 'notice')) {
      this.logger.log(`Redis node ${label}: ${f.problem}. ${f.fix}.`);
    }
    const errors = findings
      .filter((f) => f.severity === 'error')
      .map((f) => new NodeConfigurationError(label, f.problem, f.fix));
    this.found.set(key, { owner: voter, errors });
    if (errors.length === 0) {
      this.warned.delete(key);
      return undefined;
    }
    if (this.mode === 'warn') {
      // Once per voter and problem: a server whose check is tried again (admission.ts) is not
      // reported on every try.
      const said = this.warned.get(key);
      for (const e of errors) {
        if (!said?.has(e.message)) this.logger.warn(`${e.message} (preflight: 'warn': it votes anyway)`);
      }
      this.warned.set(key, new Set(errors.map((e) => e.message)));
      return undefined;
    }
    const refusal = NodeConfigurationError.of(errors);
    if (this.bootstrapped) {
      this.logger.error(`${refusal.message}\nThis node does not vote until it is fixed and reconnects.`);
    }
    return refusal;
  }

  /**
   * A finding of the engine itself about `voter` (e.g. its clock's offset from the other voters'),
   * added to what its review found: an error at the end of bootstrap under 'error', a warning
   * under 'warn' or once the bootstrap has passed.
   */
  add(voter: object, label: string, problem: string, fix: string): void {
    const error = new NodeConfigurationError(label, problem, fix);
    this.found.set(voter, { owner: voter, errors: [...(this.found.get(voter)?.errors ?? []), error] });
    if (this.mode === 'warn' || this.bootstrapped) this.logger.warn(error.message);
  }

  /**
   * At the end of bootstrap: under 'error', what the reviews so far found, as one error (it names
   * every node and fix, in the order of `voters`, the configured order, not the order in which
   * the servers happened to answer), else undefined. Later reviews are logged instead.
   */
  bootstrapDone(voters: readonly object[]): NodeConfigurationError | undefined {
    this.bootstrapped = true;
    const found = [...this.found.values()];
    const errors = voters.flatMap((voter) => found.filter((f) => f.owner === voter).flatMap((f) => f.errors));
    return this.mode === 'error' && errors.length > 0 ? NodeConfigurationError.of(errors) : undefined;
  }

  /** The label of another voter whose server has `runId`. */
  private twinOf(voter: object, runId: string): string | undefined {
    for (const [other, server] of this.servers) {
      if (other !== voter && server.runId === runId) return server.label;
    }
    return undefined;
  }
}
