import {
  context,
  DiagLogLevel,
  diag,
  propagation,
  type TracerProvider,
  trace,
} from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici'
import {
  type Histogram,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base'

/** A pull-only reader: tests call `collect()` when they want the numbers. */
class TestMetricReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

export type Attrs = Record<string, string | number | boolean>

/**
 * The real SDK, wired in memory: spans land in an InMemorySpanExporter through
 * a SimpleSpanProcessor, metrics are pulled from a MetricReader, and context
 * flows through AsyncLocalStorage as in a Node service.
 */
export function setupOtel() {
  context.disable()
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  const exporter = new InMemorySpanExporter()
  const waiters = new Set<() => void>()
  // Told after the exporter has the span: lets a test wait for spans to end, no sleeping.
  const notify: SpanProcessor = {
    onStart() {},
    onEnd() {
      for (const check of waiters) check()
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  }
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter), notify],
  })

  /**
   * Resolves with the finished spans once `done(spans)` holds. Rejects after
   * `timeoutMs` naming the spans that did end: a span that never gets what
   * the test waits for is a failure with a message, not a hung worker.
   */
  function spansWhere(
    done: (spans: ReadableSpan[]) => boolean,
    timeoutMs = 5000,
  ): Promise<ReadableSpan[]> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiters.delete(check)
        const seen = exporter.getFinishedSpans().map((s) => s.name)
        reject(new Error(`spans not as expected after ${timeoutMs} ms; ended: ${seen.join(', ')}`))
      }, timeoutMs)
      const check = () => {
        const spans = exporter.getFinishedSpans()
        if (!done(spans)) return
        waiters.delete(check)
        clearTimeout(timer)
        resolve(spans)
      }
      waiters.add(check)
      check()
    })
  }
  const reader = new TestMetricReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const tracer = tracerProvider.getTracer('test')

  async function collect(): Promise<ResourceMetrics> {
    const { resourceMetrics } = await reader.collect()
    return resourceMetrics
  }

  /** Every data point of metric `name` (attributes and value). */
  async function points(name: string): Promise<Array<{ attributes: Attrs; value: unknown }>> {
    const rm = await collect()
    const out: Array<{ attributes: Attrs; value: unknown }> = []
    for (const scope of rm.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue
        for (const p of metric.dataPoints) {
          out.push({ attributes: p.attributes as Attrs, value: p.value })
        }
      }
    }
    return out
  }

  /** The unit metric `name` was created with (undefined when nothing recorded it). */
  async function unit(name: string): Promise<string | undefined> {
    const rm = await collect()
    for (const scope of rm.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.descriptor.name === name) return metric.descriptor.unit
      }
    }
    return undefined
  }

  /** Sum of a counter over the points whose attributes include `where`. */
  async function counter(name: string, where: Attrs = {}): Promise<number> {
    let sum = 0
    for (const p of await points(name)) {
      if (matches(p.attributes, where)) sum += p.value as number
    }
    return sum
  }

  /** Count, min and max of a histogram over the points whose attributes include `where`. */
  async function histogram(name: string, where: Attrs = {}) {
    let count = 0
    let min = Number.POSITIVE_INFINITY
    let max = Number.NEGATIVE_INFINITY
    for (const p of await points(name)) {
      if (!matches(p.attributes, where)) continue
      const h = p.value as Histogram
      count += h.count
      min = Math.min(min, h.min ?? min)
      max = Math.max(max, h.max ?? max)
    }
    return { count, min, max }
  }

  async function shutdown(): Promise<void> {
    await tracerProvider.shutdown()
    await meterProvider.shutdown()
    context.disable()
    propagation.disable()
    trace.disable()
  }

  return {
    exporter,
    tracerProvider,
    meterProvider,
    tracer,
    counter,
    histogram,
    points,
    unit,
    spansWhere,
    shutdown,
  }
}

function matches(attributes: Attrs, where: Attrs): boolean {
  return Object.entries(where).every(([k, v]) => attributes[k] === v)
}

/** Finished spans named `name` (exactly one expected). */
export function spanNamed(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name)
  if (found.length !== 1) {
    throw new Error(
      `expected one span named "${name}", got ${found.length} among: ${spans.map((s) => s.name).join(', ')}`,
    )
  }
  return found[0] as ReadableSpan
}

/**
 * The standard auto-instrumentation beside ours, as a service runs it: the
 * global tracer provider and W3C propagation, and the http and undici
 * instrumentations (create it before express or http is loaded: they patch
 * modules as they are required). Returns the undo.
 */
export function instrumentHttpAndUndici(tracerProvider: TracerProvider): () => void {
  trace.setGlobalTracerProvider(tracerProvider)
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  const instrumentations = [new HttpInstrumentation(), new UndiciInstrumentation()]
  for (const i of instrumentations) i.setTracerProvider(tracerProvider)
  return () => {
    for (const i of instrumentations) i.disable()
  }
}

/** Collects OpenTelemetry's own warnings and errors (its `diag` logger) into `into`; `diag.disable()` undoes it. */
export function collectDiagWarnings(into: string[]): void {
  diag.setLogger(
    {
      error: (message: string) => into.push(message),
      warn: (message: string) => into.push(message),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  )
}
