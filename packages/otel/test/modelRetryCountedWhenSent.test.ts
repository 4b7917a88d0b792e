import { Deadline, ManualClock } from '@hourglass/core'
import { type AttemptRecord, callModel, openAICompatible } from '@hourglass/llm'
import { HourglassInstrumentation } from '@hourglass/otel'
import {
  type FakeProvider,
  openAIErrors,
  type ProviderReply,
  reply,
  startFakeProvider,
} from '@hourglass/testkit'
import { context, trace } from '@opentelemetry/api'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * `hourglass.deadline.retries` for @hourglass/llm's retries, through the
 * real llm, a loopback provider and the real SDK: a model retry counts as
 * `retried` once its attempt was sent, as an HTTP retry does; one decided
 * and then given up before its attempt counts once, as `skipped`.
 */

let otel: ReturnType<typeof setupOtel>
let instrumentation: HourglassInstrumentation
let fake: FakeProvider

beforeEach(async () => {
  otel = setupOtel()
  instrumentation = new HourglassInstrumentation({ enabled: false })
  instrumentation.setTracerProvider(otel.tracerProvider)
  instrumentation.setMeterProvider(otel.meterProvider)
  instrumentation.enable()
  fake = await startFakeProvider({ dialect: 'openai' })
})
afterEach(async () => {
  instrumentation.disable()
  await otel.shutdown()
  await fake.close()
})

const request = { messages: [{ role: 'user' as const, content: 'hi' }], maxTokens: 8 }

/** Calls the fake (one model, up to 3 attempts, a 1000 ms backoff on `clock`); `decided` resolves at the first retry decision. */
function call(clock: ManualClock, options: { signal?: AbortSignal; budgetMs?: number } = {}) {
  const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'o' })
  const deadline = Deadline.after(options.budgetMs ?? 60_000, { clock })
  let retrying: () => void = () => {}
  const decided = new Promise<void>((resolve) => {
    retrying = resolve
  })
  const answer = callModel({
    models: [model],
    request,
    deadline,
    signal: options.signal,
    retry: { delay: { random: () => 0 }, budgets: false },
    limits: { admission: false },
    onAttempt: (r: AttemptRecord) => {
      if (r.decision === 'retry') retrying()
    },
  })
  // Settled either way; the test reads what it needs.
  const settled = answer.then(
    (r) => ({ ok: true as const, text: r.text }),
    (e: unknown) => ({ ok: false as const, error: e }),
  )
  return {
    deadline,
    decided,
    settled,
    done: async () => {
      await settled
      deadline.dispose()
      await model.close()
    },
  }
}

async function retries() {
  return (await otel.points('hourglass.deadline.retries')).map((p) => [p.attributes, p.value])
}

describe('a model retry in hourglass.deadline.retries', () => {
  it('the caller aborting during its wait: counted once, skipped (why aborted), never retried; one request sent', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const clock = new ManualClock()
    const controller = new AbortController()
    const c = call(clock, { signal: controller.signal })
    await c.decided
    controller.abort()
    expect((await c.settled).ok).toBe(false)
    await c.done()
    expect(fake.requests).toHaveLength(1)
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'aborted',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })

  it('its deadline cancelled during its wait (the caller left a gateway): skipped, why aborted', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const c = call(new ManualClock())
    await c.decided
    c.deadline.cancel(new Error('the client left'))
    expect((await c.settled).ok).toBe(false)
    await c.done()
    expect(fake.requests).toHaveLength(1)
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'aborted',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })

  it('the deadline running out during its wait: skipped, why no-budget', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const clock = new ManualClock()
    // 1000 ms backoff fits in 5000 ms: the policy retries, and the deadline then ends in the wait.
    const c = call(clock, { budgetMs: 5000 })
    await c.decided
    clock.advance(5000)
    expect((await c.settled).ok).toBe(false)
    await c.done()
    expect(fake.requests).toHaveLength(1)
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'skipped',
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.retry.why': 'no-budget',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })

  it('sent: counted once its attempt was, as retried with the failure that justified it', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('second'))
    const clock = new ManualClock()
    const c = call(clock)
    await c.decided
    // Decided, not yet sent: nothing counted.
    expect(await retries()).toEqual([])
    clock.advance(1000)
    expect(await c.settled).toEqual({ ok: true, text: 'second' })
    await c.done()
    expect(fake.requests).toHaveLength(2)
    expect(await retries()).toEqual([
      [
        {
          'hourglass.deadline.retry.outcome': 'retried',
          'hourglass.deadline.retry.reason': 'server_error',
          'hourglass.deadline.call.kind': 'llm',
        },
        1,
      ],
    ])
  })
})

describe('a model retry on the trace', () => {
  it('given up during its wait: the caller’s span has its retry event, then a retry_skipped saying why', async () => {
    fake.enqueue(openAIErrors.serverError(), reply.text('late'))
    const controller = new AbortController()
    const span = otel.tracer.startSpan('POST /ask')
    // The call's deadline is made under the caller's span: its events go there.
    const c = context.with(trace.setSpan(context.active(), span), () =>
      call(new ManualClock(), { signal: controller.signal }),
    )
    await c.decided
    controller.abort()
    await c.done()
    span.end()
    const [ended] = otel.exporter.getFinishedSpans().filter((s) => s.name === 'POST /ask')
    expect(ended!.events.map((e) => [e.name, e.attributes])).toEqual([
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
          'hourglass.deadline.retry.why': 'aborted',
        },
      ],
    ])
  })
})

describe('a model send in flight across disable() and enable()', () => {
  it('counts as the model call only (llm), never also as an http call', async () => {
    let answer: (reply: ProviderReply) => void = () => {}
    fake.setReply(
      () =>
        new Promise<ProviderReply>((resolve) => {
          answer = resolve
        }),
    )
    const c = call(new ManualClock())
    await fake.waitForRequests(1)
    // The HTTP attempt started under the old handlers; it ends under new ones.
    instrumentation.disable()
    instrumentation.enable()
    answer(reply.text('answered'))
    expect(await c.settled).toEqual({ ok: true, text: 'answered' })
    await c.done()
    expect(
      (await otel.points('hourglass.deadline.calls.succeeded')).map((p) => [p.attributes, p.value]),
    ).toEqual([[{ 'hourglass.deadline.attempt': 1, 'hourglass.deadline.call.kind': 'llm' }, 1]])
  })
})
