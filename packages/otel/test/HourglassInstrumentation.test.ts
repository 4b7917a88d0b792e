import { Deadline, type HourglassChannel, ManualClock } from '@hourglass/core'
import { expressChannels } from '@hourglass/express'
import { fetchChannels } from '@hourglass/fetch'
import { type LlmAttemptMessage, llmChannels } from '@hourglass/llm'
import { HourglassInstrumentation, instrumentDeadlines } from '@hourglass/otel'
import {
  context,
  DiagLogLevel,
  diag,
  metrics,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api'
// Type only, and only here: the class has its members without depending on the package.
import type { Instrumentation } from '@opentelemetry/instrumentation'
import {
  AggregationTemporality,
  MetricReader,
  type ResourceMetrics,
} from '@opentelemetry/sdk-metrics'
import { NodeSDK } from '@opentelemetry/sdk-node'
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { spanNamed } from './helpers/otel.js'

/** A pull-only reader: the test collects when it wants the numbers. */
class TestMetricReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

const publish = <T>(channel: HourglassChannel<T>, message: T) => channel.publish(() => message)

let exporter: InMemorySpanExporter
let reader: TestMetricReader
let instrumentation: HourglassInstrumentation
let sdk: NodeSDK
// What a test started beside the SDK's instrumentation: stopped after it even
// when an assertion fails first, or its subscriptions stay in the process and
// the next file that shares it records everything twice.
const started: Array<() => void> = []

beforeEach(() => {
  exporter = new InMemorySpanExporter()
  reader = new TestMetricReader()
  instrumentation = new HourglassInstrumentation()
  sdk = new NodeSDK({
    instrumentations: [instrumentation],
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    metricReaders: [reader],
    autoDetectResources: false,
  })
  sdk.start()
})
afterEach(async () => {
  for (const stop of started.splice(0)) stop()
  instrumentation.disable()
  await sdk.shutdown()
  context.disable()
  propagation.disable()
  trace.disable()
  metrics.disable()
})

async function metric(name: string) {
  const { resourceMetrics }: { resourceMetrics: ResourceMetrics } = await reader.collect()
  const found = resourceMetrics.scopeMetrics
    .filter((s) => s.scope.name === '@hourglass/otel')
    .flatMap((s) => s.metrics)
    .find((m) => m.descriptor.name === name)
  if (!found) throw new Error(`no metric ${name}`)
  return found
}

/** Work inside a span of the SDK's own tracer, as instrumentation-http would start one. */
function inServerSpan(fn: () => void): void {
  const span = trace.getTracer('test').startSpan('POST /chat', { kind: SpanKind.SERVER })
  context.with(trace.setSpan(context.active(), span), fn)
  span.end()
}

describe('HourglassInstrumentation in NodeSDK', () => {
  it('has the members of OpenTelemetry’s Instrumentation, and is enabled by default', () => {
    const typed: Instrumentation = instrumentation
    expect(typed.instrumentationName).toBe('@hourglass/otel')
    expect(typed.getConfig().enabled).toBe(true)
    expect(expressChannels.start.hasSubscribers).toBe(true)
    instrumentation.disable()
    expect(expressChannels.start.hasSubscribers).toBe(false)
    expect(fetchChannels.attempt.hasSubscribers).toBe(false)
  })

  it('an in-process restart as the README says: a new NodeSDK does not enable a disable()d one (as with OpenTelemetry’s own); enable() after its start does, on its providers', async () => {
    await sdk.shutdown()
    instrumentation.disable()
    // OpenTelemetry's globals register once: a second SDK's are refused until these.
    trace.disable()
    metrics.disable()
    const exporter2 = new InMemorySpanExporter()
    sdk = new NodeSDK({
      instrumentations: [instrumentation],
      spanProcessors: [new SimpleSpanProcessor(exporter2)],
      autoDetectResources: false,
    })
    sdk.start()
    // registerInstrumentations enables only one whose config says enabled: false.
    expect(instrumentation.getConfig().enabled).toBe(true)
    expect(expressChannels.start.hasSubscribers).toBe(false)
    instrumentation.enable()
    expect(expressChannels.start.hasSubscribers).toBe(true)
    const deadline = Deadline.after(1500, { clock: new ManualClock() })
    const slice = deadline.plan({ work: 1 }).slice('work')
    slice.dispose()
    expect(exporter2.getFinishedSpans().map((s) => s.name)).toContain('deadline.slice work')
    expect(exporter.getFinishedSpans()).toEqual([])
    deadline.dispose()
  })

  it('says through diag when a second one is enabled beside it (everything would come twice), and not when it is alone', () => {
    const warnings: string[] = []
    diag.setLogger(
      {
        error: () => {},
        warn: (message: string) => warnings.push(message),
        info: () => {},
        debug: () => {},
        verbose: () => {},
      },
      DiagLogLevel.WARN,
    )
    try {
      const stop = instrumentDeadlines()
      started.push(stop)
      expect(warnings).toEqual([
        expect.stringMatching(/second HourglassInstrumentation .* come twice/),
      ])
      stop()
      instrumentation.disable()
      const alone = instrumentDeadlines()
      started.push(alone)
      alone()
      expect(warnings).toHaveLength(1)
    } finally {
      diag.disable()
    }
  })

  it('sends spans and second-based metrics through the SDK’s providers, under hourglass.*', async () => {
    const clock = new ManualClock()
    const deadline = Deadline.after(1500, { clock })
    inServerSpan(() => {
      publish(expressChannels.start, {
        deadline,
        req: {},
        budgetMs: 1500,
        source: 'x-deadline-remaining-ms',
        clamped: false,
        mode: 'enforce',
        refused: false,
      })
    })
    const server = spanNamed(exporter.getFinishedSpans(), 'POST /chat')
    expect(server.attributes).toMatchObject({
      'hourglass.deadline.budget_ms': 1500,
      'hourglass.deadline.remaining_ms': 1500,
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
    })
    for (const key of Object.keys(server.attributes)) expect(key).toMatch(/^hourglass\./)

    const remaining = await metric('hourglass.deadline.ingress.remaining')
    expect(remaining.descriptor.unit).toBe('s')
    expect(remaining.dataPoints).toHaveLength(1)
    expect(remaining.dataPoints[0]?.attributes).toEqual({
      'hourglass.deadline.source': 'x-deadline-remaining-ms',
      'hourglass.deadline.mode': 'enforce',
    })
    expect(remaining.dataPoints[0]?.value).toMatchObject({ count: 1, min: 1.5, max: 1.5 })
  })

  it('makes each model attempt a GenAI chat span, child of the active span, with usage and outcome', async () => {
    const attempt = (n: number, extra: Partial<LlmAttemptMessage>): LlmAttemptMessage => ({
      deadline: undefined,
      attempt: n,
      model: 'gpt-4o-mini',
      provider: 'openai',
      latencyMs: 120,
      decision: 'success',
      costUsd: 0,
      ...extra,
    })
    inServerSpan(() => {
      publish(
        llmChannels.attempt,
        attempt(1, { decision: 'retry', status: 429, errorKind: 'rate_limited', delayMs: 50 }),
      )
      publish(
        llmChannels.attempt,
        attempt(2, {
          status: 200,
          inputTokens: 42,
          outputTokens: 7,
          responseModel: 'gpt-4o-mini-2024-07-18',
          finishReason: 'stop',
        }),
      )
    })
    const spans = exporter.getFinishedSpans()
    const server = spanNamed(spans, 'POST /chat')
    const chats = spans.filter((s) => s.name === 'chat gpt-4o-mini')
    expect(chats).toHaveLength(2)
    const [failed, ok] = chats
    for (const chat of chats) {
      expect(chat.kind).toBe(SpanKind.CLIENT)
      expect(chat.parentSpanContext?.spanId).toBe(server.spanContext().spanId)
      expect(chat.spanContext().traceId).toBe(server.spanContext().traceId)
      // The message comes at the attempt's end: the span reaches back by its latency.
      const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6
      expect(ms(chat.endTime) - ms(chat.startTime)).toBeCloseTo(120, 0)
    }
    expect(ok?.attributes).toEqual({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.usage.input_tokens': 42,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.model': 'gpt-4o-mini-2024-07-18',
      'gen_ai.response.finish_reasons': ['stop'],
      'http.response.status_code': 200,
      'hourglass.deadline.attempt': 2,
      'hourglass.llm.decision': 'success',
      'hourglass.llm.provider': 'openai',
    })
    expect(ok?.status.code).toBe(SpanStatusCode.UNSET)
    expect(failed?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'error.type': 'rate_limited',
      'hourglass.llm.decision': 'retry',
    })
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR)

    const succeeded = await metric('hourglass.deadline.calls.succeeded')
    expect(succeeded.dataPoints.map((p) => [p.attributes, p.value])).toEqual([
      [{ 'hourglass.deadline.attempt': 2, 'hourglass.deadline.call.kind': 'llm' }, 1],
    ])
  })

  it('names a Gemini adapter by the conventions’ provider name, and its operation generate_content', async () => {
    inServerSpan(() => {
      publish(llmChannels.attempt, {
        deadline: undefined,
        attempt: 1,
        model: 'gemini-2.5-flash',
        provider: 'gemini',
        latencyMs: 10,
        decision: 'success',
        costUsd: 0,
      })
    })
    // The conventions' value for Gemini Generate Content ("if one of them
    // applies, that value MUST be used"), as Google's own instrumentations say it.
    expect(exporter.getFinishedSpans().map((s) => s.name)).toContain(
      'generate_content gemini-2.5-flash',
    )
    const call = spanNamed(exporter.getFinishedSpans(), 'generate_content gemini-2.5-flash')
    expect(call.attributes).toMatchObject({
      'gen_ai.provider.name': 'gcp.gemini',
      'gen_ai.operation.name': 'generate_content',
    })
    const duration = await metric('gen_ai.client.operation.duration')
    expect(duration.dataPoints.map((p) => p.attributes['gen_ai.operation.name'])).toEqual([
      'generate_content',
    ])
  })

  it('takes the operation from the wire format spoken, not the adapter’s name; no model, the operation alone', () => {
    const attempt = (provider: string, dialect: string, model: string) =>
      publish(llmChannels.attempt, {
        deadline: undefined,
        attempt: 1,
        model,
        provider,
        dialect,
        latencyMs: 10,
        decision: 'success',
        costUsd: 0,
      })
    inServerSpan(() => {
      // A Gemini adapter named by its caller, and Gemini's OpenAI-compatible endpoint named `gemini`.
      attempt('gemini-eu', 'gemini', 'gemini-2.5-flash')
      attempt('gemini', 'openai', 'gemini-2.5-pro')
      attempt('local', 'openai', '')
    })
    const names = exporter.getFinishedSpans().map((s) => s.name)
    expect(names).toEqual(
      expect.arrayContaining(['generate_content gemini-2.5-flash', 'chat gemini-2.5-pro', 'chat']),
    )
  })
})
