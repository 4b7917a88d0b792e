import diagnostics from 'node:diagnostics_channel'
import { ClientClosedError, Deadline, DeadlineExceededError, ManualClock } from '@hourglass/core'
import { callModel, openAICompatible } from '@hourglass/llm'
import { instrumentDeadlines, type StopInstrumentation } from '@hourglass/otel'
import { type FakeProvider, type ProviderReply, reply, startFakeProvider } from '@hourglass/testkit'
import { SpanStatusCode } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { setupOtel } from './helpers/otel.js'

/**
 * A consumer that stops reading the stream `callModel` handed it (`break`,
 * the stream's `cancel`, its own signal aborted mid-stream: "stop
 * generating") has not seen the model call fail: the attempt's egress span
 * says so already (fetch's `stoppedBy: 'caller'`: UNSET), and its chat span
 * said ERROR `aborted`, with `error.type = aborted` on the duration metric
 * and a skipped retry (`why = aborted`) counted — every stop a failed model
 * call on an error-rate dashboard. llm now says `stoppedBy: 'caller'` too.
 * The deadline ending the stream is still a failure, and so is a stop
 * before any answer came (as on the egress span).
 */

let otel: ReturnType<typeof setupOtel>
let stop: StopInstrumentation
let fake: FakeProvider
const DURATION = 'gen_ai.client.operation.duration'

beforeEach(() => {
  otel = setupOtel()
  stop = instrumentDeadlines({
    tracerProvider: otel.tracerProvider,
    meterProvider: otel.meterProvider,
  })
})
afterEach(async () => {
  stop()
  await fake.close()
  await otel.shutdown()
})

/** The first token, then nothing more with the connection open (the fake's clock never moves). */
/** A reason of the app's own for a cancel: a gateway shutting down. */
class ShutdownError extends Error {
  readonly code = 'GATEWAY_SHUTDOWN'
}

const STALLS_AFTER_FIRST_TOKEN = reply.text('one two three four five', { tokenDelayMs: 1000 })

/**
 * `deadlineSignal`: the call is given its deadline's own signal, as
 * plan.run() hands a slice's work the slice's (`(signal, slice) =>
 * callModel({ deadline: slice, signal, … })`).
 */
async function streamOn(providerReply: ProviderReply, { deadlineSignal = false } = {}) {
  fake = await startFakeProvider({ dialect: 'openai', clock: new ManualClock() })
  fake.enqueue(providerReply)
  const model = openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-x' })
  const clock = new ManualClock()
  const deadline = Deadline.after(60_000, { clock })
  const controller = new AbortController()
  const stream = callModel({
    models: [model],
    request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 8, stream: true },
    deadline,
    signal: deadlineSignal ? deadline.signal : controller.signal,
    retry: { maxAttempts: 1, budgets: false },
    limits: { admission: false },
  })
  /** Waits for the call's end, then for the attempt's chat and egress spans. */
  const ended = async () => {
    await stream.result.catch(() => {})
    const spans = await otel.spansWhere(
      (s) => chatSpan(s) !== undefined && egressSpan(s) !== undefined,
    )
    deadline.dispose()
    await model.close()
    return { chat: chatSpan(spans) as ReadableSpan, egress: egressSpan(spans) as ReadableSpan }
  }
  return { clock, deadline, controller, stream, ended }
}
type Setup = Awaited<ReturnType<typeof streamOn>>

const chatSpan = (spans: ReadableSpan[]) => spans.find((s) => s.name === 'chat gpt-x')
const egressSpan = (spans: ReadableSpan[]) =>
  spans.find((s) => s.name.startsWith('deadline.egress'))

async function durationErrorTypes() {
  return (await otel.points(DURATION)).map((p) => p.attributes['error.type'])
}

async function skippedRetries() {
  return (await otel.points('hourglass.deadline.retries'))
    .filter((p) => p.attributes['hourglass.deadline.retry.outcome'] === 'skipped')
    .map((p) => [p.attributes['hourglass.deadline.retry.why'], p.value])
}

async function succeededCalls() {
  return (await otel.points('hourglass.deadline.calls.succeeded')).map((p) => [
    {
      attempt: p.attributes['hourglass.deadline.attempt'],
      kind: p.attributes['hourglass.deadline.call.kind'],
    },
    p.value,
  ])
}

describe('the caller stops the stream: the chat span is no error, as its egress span', () => {
  it('a break after the first token: UNSET, no error.type on the span or the duration, no skipped retry; a call that succeeded', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    for await (const event of setup.stream) if (event.type === 'text') break
    const { chat, egress } = await setup.ended()
    expect(egress.status.code).toBe(SpanStatusCode.UNSET)
    expect(chat.status.code).toBe(SpanStatusCode.UNSET)
    expect(chat.attributes['error.type']).toBeUndefined()
    expect(chat.attributes['http.response.status_code']).toBe(200)
    // llm's own decision stays as it was.
    expect(chat.attributes['hourglass.llm.decision']).toBe('fail')
    expect(await durationErrorTypes()).toEqual([undefined])
    expect(await skippedRetries()).toEqual([])
    // A call that got its answer: counted by llm's `fail`, "stop generating"
    // was in no series at all (no success, no skipped retry).
    expect(await succeededCalls()).toEqual([[{ attempt: 1, kind: 'llm' }, 1]])
  })

  it('a stop after the 200 and before the first token: no error on the span, and no call that got its answer', async () => {
    // undici's own channel: the stream's 200 reached the client.
    const headers = new Promise<void>((resolve) => {
      const seen = () => {
        diagnostics.unsubscribe('undici:request:headers', seen)
        resolve()
      }
      diagnostics.subscribe('undici:request:headers', seen)
    })
    const setup = await streamOn(reply.text('late', { firstTokenDelayMs: 60_000 }))
    await headers
    // The caller's own timeout ends the wait for a token.
    setup.controller.abort(new DOMException('The operation timed out.', 'TimeoutError'))
    const { chat } = await setup.ended()
    expect(chat.attributes['http.response.status_code']).toBe(200)
    expect(await succeededCalls()).toEqual([])
    expect(await skippedRetries()).toEqual([])
  })

  it.each(['cancel', 'signal'] as const)(
    'mid-stream, by the stream’s cancel or the caller’s signal (as fetch’s aborted mid-body): %s',
    async (how) => {
      const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
      const reason = new Error('stop generating')
      try {
        for await (const event of setup.stream) {
          if (event.type !== 'text') continue
          if (how === 'cancel') setup.stream.cancel(reason)
          else setup.controller.abort(reason)
        }
      } catch {
        // the reason, as it is
      }
      const { chat } = await setup.ended()
      expect(chat.status.code).toBe(SpanStatusCode.UNSET)
      expect(chat.attributes['error.type']).toBeUndefined()
      expect(await durationErrorTypes()).toEqual([undefined])
      expect(await skippedRetries()).toEqual([])
    },
  )
})

describe("the caller's own signal, aborted with a reason that looks like a deadline's end: told by where it came from", () => {
  // Not the deadline's: a ClientClosedError of the caller's own is its
  // choice to stop (llm's chat span UNSET), where the egress span, judged
  // by the code alone, said ERROR CLIENT_CLOSED. A DeadlineExceededError is
  // a deadline's expiry whichever signal carried it: both spans ERROR.
  it.each([
    ['a ClientClosedError of its own', () => new ClientClosedError(), SpanStatusCode.UNSET],
    [
      "another deadline's DeadlineExceededError",
      () => new DeadlineExceededError({ budgetMs: 5, elapsedMs: 5 }),
      SpanStatusCode.ERROR,
    ],
  ] as const)('mid-stream, %s: the chat and egress spans agree', async (_what, reason, status) => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    try {
      for await (const event of setup.stream) {
        if (event.type === 'text') setup.controller.abort(reason())
      }
    } catch {
      // the reason, as it is
    }
    const { chat, egress } = await setup.ended()
    expect([chat.status.code, egress.status.code]).toEqual([status, status])
    expect(egress.attributes['http.response.status_code']).toBe(200)
  })
})

describe('still failures', () => {
  it('the deadline expires mid-stream: ERROR, DEADLINE_EXCEEDED on the span and the duration', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    try {
      for await (const event of setup.stream) if (event.type === 'text') setup.clock.advance(60_000)
    } catch {
      // STREAM_INTERRUPTED
    }
    const { chat } = await setup.ended()
    expect(chat.status.code).toBe(SpanStatusCode.ERROR)
    expect(chat.attributes['error.type']).toBe('DEADLINE_EXCEEDED')
    expect(await durationErrorTypes()).toEqual(['DEADLINE_EXCEEDED'])
    expect(await skippedRetries()).toEqual([['no-budget', 1]])
  })

  // llm stops the body it reads when that signal aborts, ahead of fetch's
  // own watch of the deadline: fetch ended the attempt as the caller's stop,
  // with the deadline's code. The chat span said DEADLINE_EXCEEDED (or
  // aborted: the client left, a shutdown); its egress span UNSET, no
  // error.type. Told by its code alone, a cancel for any other reason (a
  // gateway's shutdown) still read UNSET beside a chat span in error.
  it.each([
    ['expires', 'DEADLINE_EXCEEDED', (s: Setup) => s.clock.advance(60_000)],
    [
      'is cancelled (the client left)',
      'CLIENT_CLOSED',
      (s: Setup) => s.deadline.cancel(new ClientClosedError()),
    ],
    [
      "is cancelled with a reason of the app's (a shutdown)",
      'GATEWAY_SHUTDOWN',
      (s: Setup) => s.deadline.cancel(new ShutdownError('shutting down')),
    ],
  ] as const)(
    'the deadline whose own signal the call was given %s mid-stream: its egress span is ERROR %s too',
    async (_when, code, end) => {
      const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN, { deadlineSignal: true })
      try {
        for await (const event of setup.stream) if (event.type === 'text') end(setup)
      } catch {
        // the deadline's error
      }
      const { chat, egress } = await setup.ended()
      expect(chat.status.code).toBe(SpanStatusCode.ERROR)
      expect(egress.status.code).toBe(SpanStatusCode.ERROR)
      expect(egress.attributes).toMatchObject({
        'http.response.status_code': 200,
        'error.type': code,
        'hourglass.deadline.phase': 'body',
      })
      // The chat span and the duration say the same code as the egress span.
      expect(chat.attributes['error.type']).toBe(code)
      expect(await durationErrorTypes()).toEqual([code])
    },
  )

  // llm says `aborted` for a cancelled deadline as for the caller's own
  // abort: the chat span and the duration metric said `aborted` beside an
  // egress span (and instrumentation-undici's) saying CLIENT_CLOSED, and a
  // query for the clients that left missed the model attempts they cut.
  it('the deadline is cancelled mid-stream (the client left): the chat span and the duration say CLIENT_CLOSED, as the egress span', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    try {
      for await (const event of setup.stream)
        if (event.type === 'text') setup.deadline.cancel(new ClientClosedError())
    } catch {
      // the deadline's error
    }
    const { chat, egress } = await setup.ended()
    expect(egress.attributes['error.type']).toBe('CLIENT_CLOSED')
    expect(chat.status.code).toBe(SpanStatusCode.ERROR)
    expect(chat.attributes['error.type']).toBe('CLIENT_CLOSED')
    expect(await durationErrorTypes()).toEqual(['CLIENT_CLOSED'])
  })

  it('the caller’s signal aborted before any answer: ERROR aborted, as the egress span of a stop before the answer', async () => {
    const setup = await streamOn(reply.hang())
    await fake.waitForRequests(1)
    setup.controller.abort(new Error('gave up waiting'))
    const { chat, egress } = await setup.ended()
    expect(egress.status.code).toBe(SpanStatusCode.ERROR)
    expect(chat.status.code).toBe(SpanStatusCode.ERROR)
    expect(chat.attributes['error.type']).toBe('aborted')
    expect(await durationErrorTypes()).toEqual(['aborted'])
    expect(await skippedRetries()).toEqual([['aborted', 1]])
    expect(await succeededCalls()).toEqual([])
  })
})

it('a 4xx answer its caller stopped is still an error, as on the egress span (the client-span rule)', async () => {
  const { modelStoppedByCaller } = await import('../src/handlers.js')
  expect(modelStoppedByCaller({ stoppedBy: 'caller', status: 200 })).toBe(true)
  expect(modelStoppedByCaller({ stoppedBy: 'caller', status: 429 })).toBe(false)
  expect(modelStoppedByCaller({ stoppedBy: 'caller', status: 503 })).toBe(false)
})
