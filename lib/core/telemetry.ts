import type { LockEvent, LockEvents } from './events.js';
import type { Runtime } from './runtime.js';

/** The meter and tracer name of everything the engine records. */
export const INSTRUMENTATION_NAME = 'nest-quorum-lock';

/** The part of `@opentelemetry/api` used here (an optional peer: imported on first use only). */
type OtelApi = typeof import('@opentelemetry/api');
type Meter = import('@opentelemetry/api').Meter;
type Tracer = import('@opentelemetry/api').Tracer;

/**
 * Where the engine records (option `telemetry`): explicit OpenTelemetry providers (an SDK's
 * `MeterProvider` / `TracerProvider`), or `false` for nothing. Default: the globally registered
 * providers, looked up when the engine connects.
 */
export interface TelemetryProviders {
  readonly meterProvider?: { getMeter(name: string): unknown };
  readonly tracerProvider?: { getTracer(name: string): unknown };
}

/**
 * Records the engine's events as OpenTelemetry metrics and spans, when `@opentelemetry/api` is
 * installed AND a meter or tracer provider is registered: otherwise nothing is attached, and the
 * engine builds no event at all (see LockEvents.observed), so it costs nothing measurable.
 * Metrics (meter `nest-quorum-lock`): `redlock.acquire.duration` (histogram, ms, attribute
 * `outcome` = acquired | busy | unavailable), `redlock.lock.held.duration` (histogram, ms),
 * `redlock.locks.held` (up-down counter), `redlock.lock.lost` (counter), `redlock.node.errors`
 * (counter, attribute `node`); a span `redlock.acquire` per acquire (tracer `nest-quorum-lock`).
 * Resolves with how to detach.
 */
export async function attachTelemetry(
  events: LockEvents,
  runtime: Runtime,
  providers?: TelemetryProviders | false,
): Promise<(() => void) | undefined> {
  if (providers === false) return undefined;
  let api: OtelApi;
  try {
    api = await import('@opentelemetry/api');
  } catch {
    return undefined; // not installed
  }
  let meter: Meter | undefined;
  let tracer: Tracer | undefined;
  if (providers) {
    meter = providers.meterProvider?.getMeter(INSTRUMENTATION_NAME) as Meter | undefined;
    tracer = providers.tracerProvider?.getTracer(INSTRUMENTATION_NAME) as Tracer | undefined;
  } else {
    const meterProvider = api.metrics.getMeterProvider();
    const tracerProvider = api.trace.getTracerProvider();
    const delegate = (
      tracerProvider as Partial<InstanceType<OtelApi['ProxyTracerProvider']>>
    ).getDelegate?.();
    if (meterProvider.constructor.name !== 'NoopMeterProvider')
      meter = api.metrics.getMeter(INSTRUMENTATION_NAME);
    if ((delegate ?? tracerProvider).constructor.name !== 'NoopTracerProvider') {
      tracer = api.trace.getTracer(INSTRUMENTATION_NAME);
    }
  }
  if (!meter && !tracer) return undefined;
  meter ??= api.metrics.getMeter(INSTRUMENTATION_NAME); // the no-op meter: instruments that do nothing
  const traced = tracer !== undefined;
  const acquireDuration = meter.createHistogram('redlock.acquire.duration', {
    unit: 'ms',
    description: 'Time an acquire took, by outcome',
  });
  const heldDuration = meter.createHistogram('redlock.lock.held.duration', {
    unit: 'ms',
    description: 'How long locks were held (released or lost)',
  });
  const held = meter.createUpDownCounter('redlock.locks.held', { description: 'Locks held right now' });
  const lost = meter.createCounter('redlock.lock.lost', { description: 'Locks lost while held' });
  const nodeErrors = meter.createCounter('redlock.node.errors', {
    description: 'Connections to a node lost',
  });

  return events.tap((event: LockEvent) => {
    switch (event.type) {
      case 'acquired':
      case 'busy':
      case 'unavailable': {
        acquireDuration.record(event.durationMs ?? 0, { outcome: event.type });
        if (event.type === 'acquired') held.add(1);
        if (traced) recordAcquireSpan(api, tracer!, event, runtime.wallNow());
        return;
      }
      case 'released':
      case 'lost':
        held.add(-1);
        heldDuration.record(event.durationMs ?? 0);
        if (event.type === 'lost') lost.add(1);
        return;
      case 'node-down':
        nodeErrors.add(1, { node: event.node ?? 'unknown' });
        return;
      default:
        return;
    }
  });
}

/** A `redlock.acquire` span covering the acquire that just ended, in the caller's context. */
function recordAcquireSpan(api: OtelApi, tracer: Tracer, event: LockEvent, endedAt: number): void {
  const startTime = endedAt - (event.durationMs ?? 0);
  const span = tracer.startSpan('redlock.acquire', {
    startTime,
    attributes: {
      'redlock.resources': [...event.resources],
      'redlock.outcome': event.type,
      ...(event.fencingToken === undefined ? {} : { 'redlock.fencing_token': event.fencingToken }),
    },
  });
  if (event.type === 'unavailable')
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'quorum unavailable' });
  span.end();
}
