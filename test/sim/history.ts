import type { Acquire, History, StoreOp } from '../faults/checker.js';

/**
 * What one client process did, in the fault suite's history form (test/faults/checker.ts), with
 * simulated real time (ms) for its timestamps: the checkers run on it unchanged. A lock over
 * several resources is one Acquire per resource (the checkers look at one resource at a time).
 */
export class ClientHistory implements History {
  readonly acquires: Acquire[] = [];
  readonly ops: StoreOp[] = [];
  ended = false;
  private next = 0;

  constructor(readonly worker: string) {}

  request(
    at: number,
    resource: string,
    ttl: number,
    wait: number,
    extra: { permits?: number; mode?: 'read' | 'write' } = {},
  ): Acquire {
    const acquire: Acquire = {
      worker: this.worker,
      i: this.next++,
      resource,
      ttl,
      wait,
      paused: false,
      request: at,
      outcome: 'indeterminate',
      extensions: [],
      staleReleases: [],
      pausedInHold: false,
      ...(extra.permits === undefined ? {} : { permits: extra.permits }),
      ...(extra.mode === undefined ? {} : { mode: extra.mode }),
    };
    this.acquires.push(acquire);
    return acquire;
  }

  grant(
    a: Acquire,
    at: number,
    token: number,
    validityEnd: number,
    permit?: number,
    mode?: 'read' | 'write',
  ): void {
    a.outcome = 'granted';
    a.end = at;
    a.token = token;
    if (permit !== undefined) a.permit = permit;
    if (mode !== undefined && a.mode !== undefined) a.mode = mode;
    a.grantValidityEnd = a.validityEnd = validityEnd;
  }

  fail(a: Acquire, at: number, error: string, message: string): void {
    a.outcome = 'failed';
    a.end = at;
    a.error = error;
    a.message = message.slice(0, 200);
  }

  abort(a: Acquire, at: number, reason: string, validityEnd: number): void {
    a.abort = { t: at, reason, validityEnd };
    a.validityEnd = Math.max(a.validityEnd ?? -Infinity, validityEnd);
  }

  release(a: Acquire, at: number, validityEnd: number): void {
    a.releaseCalled ??= at;
    a.validityEnd = Math.max(a.validityEnd ?? -Infinity, validityEnd);
  }

  extended(a: Acquire, request: number, at: number, ok: boolean, error?: string): void {
    a.extensions.push({ request, t: at, ok, error, afterExpiry: false });
  }

  op(
    a: Acquire,
    resource: string,
    kind: 'read' | 'write',
    token: number,
    at: number,
    value?: number,
  ): StoreOp {
    const op: StoreOp = { worker: this.worker, i: a.i, resource, kind, token, request: at, value };
    this.ops.push(op);
    return op;
  }

  ack(op: StoreOp, at: number, ok: boolean, value?: number): void {
    op.ack = at;
    op.ok = ok;
    if (op.kind === 'read') op.value = value;
  }
}
