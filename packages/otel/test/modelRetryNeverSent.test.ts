import { Deadline, ManualClock } from '@hourglass/core'
import { createFetch, fetchChannels } from '@hourglass/fetch'
import { type AttemptRecord, callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import {
  type FakeProvider,
  faultServer,
  openAIErrors,
  reply,
  startFakeProvider,
} from '@hourglass/testkit'
import { context, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A retry decided (its `retry` event) whose attempt is then never sent. Its
 * wait can end with the deadline (llm's `retry-skipped`, fetch's too), or
 * just before it, with less left than @hourglass/fetch sends with
 * (`minBudgetMs`): llm then starts the attempt, and fetch refuses it at
 * once — an `hourglass:llm:attempt` with `sent: false` and `retryReason`.
 * Either way the retry counts once, as `skipped`, for the failure it was
 * for: the second way counted it for `deadline_exceeded`, the never-sent
 * attempt's own kind, so the same retry given up for want of budget was a
 * `server_error` or a `deadline_exceeded` by 2 ms of clock.
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let fake: FakeProvider

beforeEach(async () => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
  fake = await startFakeProvider({ dialect: 'openai' })
})
afterEach(async () => {
  stop()
  await otel.shutdown()
  await fake.close()
})

const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }

async function retries() {
  return (await otel.points('hourglass.deadline.retries')).map((p) => [p.attributes, p.value])
}

/**
 * One model, a 5000 ms deadline on `clock`, a 1000 ms backoff, under a span
 * of the caller's; `decided` resolves at the first retry decision.
 */
function call(clock: ManualClock) {
  const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'o' })
  const deadline = Deadline.after(5000, { clock })
  const span = otel.tracer.startSpan('POST /ask')
  let retrying: () => void = () => {}
  const decided = new Promise<void>((resolve) => {
    retrying = resolve
  })
  const settled = context
    .with(trace.setSpan(context.active(), span), () =>
      callModel({
        models: [model],
        request,
        deadline,
        retry: { delay: { random: () => 0 }, budgets: false },
        limits: { admission: false },
        onAttempt: (r: AttemptRecord) => {
          if (r.decision === 'retry') retrying()
        },
      }),
    )
    .then(
      () => 'answered',
      (error: { code?: string }) => error.code,
    )
  return {
    decided,
    settled,
    done: async () => {
      await settled
      span.end()
      deadline.dispose()
      await model.close()
    },
  }
}

const SKIPPED_SERVER_ERROR = {
  'hourglass.deadline.retry.outcome': 'skipped',
  'hourglass.deadline.retry.reason': 'server_error',
  'hourglass.deadline.retry.why': 'no-budget',
  'hourglass.deadline.call.kind': 'llm',
}

describe('a model retry whose wait ends with too little left to send it', () => {
  it('counts once, as skipped for the failure it was for (not the never-sent attempt’s deadline_exceeded); never as retried', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const clock = new ManualClock()
    const c = call(clock)
    await c.decided
    // Past the 1000 ms wait, 2 ms short of the deadline: under fetch's minBudgetMs (5).
    clock.advance(4998)
    expect(await c.settled).toBe('DEADLINE_EXCEEDED')
    await c.done()
    expect(fake.requests).toHaveLength(1)
    expect(await retries()).toEqual([[SKIPPED_SERVER_ERROR, 1]])
  })

  it('counts as the same retry given up when the deadline ends during its wait (the control)', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const clock = new ManualClock()
    const c = call(clock)
    await c.decided
    clock.advance(5000)
    expect(await c.settled).toBe('DEADLINE_EXCEEDED')
    await c.done()
    expect(fake.requests).toHaveLength(1)
    expect(await retries()).toEqual([[SKIPPED_SERVER_ERROR, 1]])
  })

  it("on the caller's span: its retry event, then a retry_skipped for that attempt with the same reason", async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const clock = new ManualClock()
    const c = call(clock)
    await c.decided
    clock.advance(4998)
    await c.done()
    const spans = otel.exporter.getFinishedSpans()
    // The attempt never sent has no chat span: only the first one does.
    expect(spans.filter((s) => s.name === 'chat o')).toHaveLength(1)
    const caller = spans.find((s) => s.name === 'POST /ask')
    expect(caller?.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'hourglass.deadline.retry',
        {
          'hourglass.deadline.attempt': 2,
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.delay_ms': 1000,
        },
      ],
      [
        'hourglass.deadline.retry_skipped',
        {
          // The attempt that failed, as fetch's retry_skipped names it: one less than the retry's.
          'hourglass.deadline.attempt': 1,
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'no-budget',
        },
      ],
    ])
  })

  it('a model attempt never sent that was no retry keeps its own kind as its reason', async () => {
    // The first attempt, with 2 ms left: fetch refuses it at once, and no retry was decided before.
    const clock = new ManualClock()
    const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'o' })
    const deadline = Deadline.after(2, { clock })
    try {
      const outcome = await callModel({
        models: [model],
        request,
        deadline,
        retry: { budgets: false },
        limits: { admission: false },
      }).then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      )
      expect(outcome).toBe('DEADLINE_EXCEEDED')
    } finally {
      deadline.dispose()
      await model.close()
    }
    expect(fake.requests).toHaveLength(0)
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'deadline_exceeded',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })
})

describe('an HTTP retry whose wait the deadline ends (the control: fetch already counts it right)', () => {
  it('counts once, as skipped for its status (no-budget), never as retried', async () => {
    const upstream = await faultServer(() => ({
      type: 'respond',
      status: 503,
      body: 'busy',
      headers: { 'retry-after': '1' },
    }))
    const clock = new ManualClock()
    const fetch = createFetch({ retry: { statuses: [503] }, clock })
    const deadline = Deadline.after(5000, { clock })
    // The deadline ends once the retry is announced, during its 1 s wait.
    const onRetry = () => queueMicrotask(() => clock.advance(5000))
    fetchChannels.retry.subscribe(onRetry)
    try {
      const outcome = await fetch(`${upstream.url}/price`, { deadline }).then(
        () => 'answered',
        (error: { code?: string }) => error.code,
      )
      expect(outcome).toBe('DEADLINE_EXCEEDED')
      expect(upstream.records).toHaveLength(1)
    } finally {
      fetchChannels.retry.unsubscribe(onRetry)
      deadline.dispose()
      await fetch.close()
      await upstream.close()
    }
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'HTTP_503',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.call.kind': 'http',
        },
        1,
      ],
    ])
  })
})
