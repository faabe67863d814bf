import {
  MeterProvider,
  PeriodicExportingMetricReader,
  InMemoryMetricExporter,
  AggregationTemporality,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { TelemetryProviders } from 'nest-quorum-lock';

/** Spans go nowhere: the bench measures recording them (span objects, the batch processor), not shipping them. */
class DroppingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/**
 * OpenTelemetry SDK providers as an application would register them: a metric reader that
 * collects every 10 s into memory, and a batching span processor. For the `ours+otel` column.
 */
export function benchTelemetry(): TelemetryProviders & { shutdown(): Promise<void> } {
  const meterProvider = new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new InMemoryMetricExporter(AggregationTemporality.DELTA),
        exportIntervalMillis: 10_000,
      }),
    ],
  });
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new BatchSpanProcessor(new DroppingExporter())],
  });
  return {
    meterProvider,
    tracerProvider,
    shutdown: async () => {
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}
