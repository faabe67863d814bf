import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Redlock } from '../../lib/index.js';
import { MemoryServer, memoryNode } from '../../lib/testing/index.js';

/** A pull reader: the test collects when it wants to look. */
class TestReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const engineOnMemory = () =>
  new Redlock({ nodes: [memoryNode(new MemoryServer())], restartGuard: false, logger: quiet });

/** Data points of one instrument, by name. */
function points(collected: ResourceMetrics, name: string) {
  const metric = collected.scopeMetrics
    .filter((s) => s.scope.name === 'nest-quorum-lock')
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name);
  return (metric?.dataPoints ?? []) as Array<{ attributes: Record<string, unknown>; value: unknown }>;
}

describe('OpenTelemetry (SDK in-memory reader and exporter; no Redis)', () => {
  test('without a registered provider nothing is attached: the engine builds no event', async () => {
    const engine = engineOnMemory();
    await engine.connect();
    const lock = await engine.acquire('no-otel');
    await lock.release();
    expect((engine as unknown as { events: { observed: boolean } }).events.observed).toBe(false);
    await engine.close();
  });

  describe('with providers registered', () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    let engine: Redlock;

    beforeAll(async () => {
      metrics.setGlobalMeterProvider(meterProvider);
      trace.setGlobalTracerProvider(tracerProvider);
      engine = engineOnMemory();
      await engine.connect();
    });
    afterAll(async () => {
      await engine?.close();
      metrics.disable();
      trace.disable();
      await meterProvider.shutdown();
      await tracerProvider.shutdown();
    });

    test('acquire duration by outcome, locks held, held duration, lost locks and one span per acquire', async () => {
      const a = await engine.acquire('otel-a');
      const b = await engine.acquire('otel-b');
      await expect(engine.acquire('otel-a', { wait: 0 })).rejects.toMatchObject({
        name: 'LockNotAcquiredError',
      });
      await a.release();
      const { resourceMetrics } = await reader.collect();

      const durations = points(resourceMetrics, 'redlock.acquire.duration');
      const count = (outcome: string) =>
        (durations.find((p) => p.attributes.outcome === outcome)?.value as { count: number } | undefined)
          ?.count;
      expect(count('acquired')).toBe(2);
      expect(count('busy')).toBe(1);
      expect(points(resourceMetrics, 'redlock.locks.held')[0]!.value).toBe(1); // b is still held
      expect(
        (points(resourceMetrics, 'redlock.lock.held.duration')[0]!.value as { count: number }).count,
      ).toBe(1);

      const spans = exporter.getFinishedSpans().filter((s) => s.name === 'redlock.acquire');
      expect(spans.map((s) => s.attributes['redlock.outcome'])).toEqual(['acquired', 'acquired', 'busy']);
      expect(spans[0]!.attributes['redlock.resources']).toEqual(['otel-a']);
      expect(spans[0]!.attributes['redlock.fencing_token']).toBe(a.fencingToken);
      await b.release();
    });

    test('a lock whose validity ran out counts as lost', async () => {
      await engine.acquire('otel-lost', { ttl: 150 });
      await new Promise((r) => setTimeout(r, 250));
      const { resourceMetrics } = await reader.collect();
      expect(points(resourceMetrics, 'redlock.lock.lost')[0]!.value).toBe(1);
      expect(points(resourceMetrics, 'redlock.locks.held')[0]!.value).toBe(0);
    });
  });

  test('explicit providers (option telemetry) record without any global registration; false records nothing', async () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const engine = new Redlock({
      nodes: [memoryNode(new MemoryServer())],
      restartGuard: false,
      logger: quiet,
      telemetry: { meterProvider, tracerProvider },
    });
    const off = new Redlock({
      nodes: [memoryNode(new MemoryServer())],
      restartGuard: false,
      logger: quiet,
      telemetry: false,
    });
    await Promise.all([engine.connect(), off.connect()]);
    await (await engine.acquire('explicit')).release();
    await (await off.acquire('explicit')).release();
    const { resourceMetrics } = await reader.collect();
    expect((points(resourceMetrics, 'redlock.acquire.duration')[0]!.value as { count: number }).count).toBe(
      1,
    );
    expect(exporter.getFinishedSpans().map((span) => span.name)).toEqual(['redlock.acquire']);
    expect((off as unknown as { events: { observed: boolean } }).events.observed).toBe(false);
    await Promise.all([engine.close(), off.close()]);
    await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
  });
});
