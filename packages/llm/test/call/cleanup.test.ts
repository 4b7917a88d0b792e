import { getEventListeners } from 'node:events'
import { Deadline } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { openAIErrors, reply } from '@hourglass/testkit'
import type { Dispatcher } from 'undici'
import { describe, expect, it } from 'vitest'
import {
  type ModelAdapter,
  NEVER_ABORTED,
  type SendOptions,
} from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()

describe('cleanup', () => {
  it('leaves no abort listener on the deadline or the caller’s signal after retries, streams and failures', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      openAIErrors.serverError(),
      reply.text('whole'),
      openAIErrors.serverError(),
      reply.text('streamed'),
      openAIErrors.badRequest(),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(10_000)
    const controller = new AbortController()
    const common = {
      models: [model],
      deadline,
      signal: controller.signal,
      retry: { delay: FAST_RETRIES },
    }
    const messages = [user('hi')]
    await callModel({ ...common, request: { messages, maxTokens: 8 } })
    await callModel({
      ...common,
      request: { messages, maxTokens: 8, stream: true },
      firstTokenTimeoutMs: 5000,
    }).result
    await callModel({ ...common, request: { messages, maxTokens: 8 } }).catch(() => {})
    expect(fake.requests).toHaveLength(5)
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it.each([false, true])(
    '12 calls in flight under one caller’s signal (stream: %s): one abort listener on it, no MaxListenersExceededWarning; its abort ends all 12 and leaves none',
    async (stream) => {
      const warnings: Error[] = []
      const onWarning = (warning: Error) => warnings.push(warning)
      process.on('warning', onWarning)
      try {
        const fake = await fakes.start({ dialect: 'openai', reply: reply.hang() })
        const model = fakes.adapter(
          openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
        )
        const controller = new AbortController()
        // A batch sent together under the one signal its caller gave it.
        const calls = Array.from({ length: 12 }, (_, i) => {
          const options = {
            models: [model],
            signal: controller.signal,
            limits: { admission: false as const },
            retry: { budgets: false as const },
          }
          const messages = [user(`prompt ${String(i)}`)]
          return stream
            ? callModel({ ...options, request: { messages, maxTokens: 8, stream: true } }).result
            : callModel({ ...options, request: { messages, maxTokens: 8 } })
        })
        await fake.waitForRequests(12)
        // process.emitWarning's 'warning' event comes on a later tick.
        await new Promise((resolve) => setImmediate(resolve))
        expect(warnings.map((w) => w.name)).toEqual([])
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)

        const reason = new Error('user left')
        controller.abort(reason)
        const outcomes = await Promise.allSettled(calls)
        expect(outcomes.every((o) => o.status === 'rejected' && o.reason === reason)).toBe(true)
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
        await new Promise((resolve) => setImmediate(resolve))
        expect(warnings.map((w) => w.name)).toEqual([])
      } finally {
        process.off('warning', onWarning)
      }
    },
  )

  it('the caller’s abort ends a retry wait at once, with the caller’s reason', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.rateLimited({ retryAfterMs: 5000 }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const controller = new AbortController()
    const call = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8 },
      signal: controller.signal,
      onAttempt: (r) => {
        if (r.decision === 'retry') controller.abort(new Error('user left'))
      },
    })
    await expect(call).rejects.toThrow('user left')
    expect(fake.requests).toHaveLength(1)
  })

  it('a whole answer nothing but its deadline can end: undici is given no signal to listen to, and none is left listened to', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('one'), reply.text('two'))
    const signals: unknown[] = []
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'sk',
        model: 'gpt-4o',
        fetch: watchingSignals(signals),
      }),
    )
    using deadline = Deadline.after(10_000)
    const request = { messages: [user('hi')], maxTokens: 8 }
    await callModel({ models: [model], request, deadline })
    // With a caller's signal, the attempt's own follows it, and undici listens to that.
    const controller = new AbortController()
    await callModel({ models: [model], request, deadline, signal: controller.signal })
    expect(signals).toHaveLength(2)
    expect(signals[0]).toBeUndefined()
    expect(signals[1]).toBeInstanceOf(AbortSignal)
    expect(getEventListeners(NEVER_ABORTED, 'abort')).toHaveLength(0)
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('an adapter of your own still gets a signal of its own on every attempt, never aborted after a whole answer', async () => {
    const sends: SendOptions[] = []
    const model: ModelAdapter = {
      name: 'mine',
      model: 'm',
      baseURL: 'http://127.0.0.1:9',
      dialect: openAICompatible({ baseURL: 'http://127.0.0.1:9', model: 'm' }).dialect,
      apiKeys: [],
      nextKey: () => undefined,
      async send(_request: unknown, send: SendOptions) {
        sends.push(send)
        return {
          ok: true as const,
          status: 200,
          response: {
            id: 'r',
            model: 'm',
            provider: 'mine',
            content: [{ type: 'text' as const, text: 'hi' }],
            text: 'hi',
            finishReason: 'stop' as const,
            usage: { inputTokens: 1, outputTokens: 1 },
          },
        }
      },
      open: async () => {
        throw new Error('not streamed')
      },
      close: async () => {},
    }
    const request = { messages: [user('hi')], maxTokens: 8 }
    await callModel({ models: [model], request })
    await callModel({ models: [model], request })
    expect(sends).toHaveLength(2)
    const [first, second] = sends as [SendOptions, SendOptions]
    expect(first.signal).toBeInstanceOf(AbortSignal)
    expect(first.signal).not.toBe(second.signal)
    expect(first.signal).not.toBe(NEVER_ABORTED)
    expect(first.signal.aborted).toBe(false)
  })
})

/** A fetch whose dispatcher notes the `signal` each request is dispatched with. */
function watchingSignals(signals: unknown[]): HourglassFetch {
  const inner = createFetch()
  const dispatcher = inner.dispatcher.compose(
    (dispatch: Dispatcher.Dispatch): Dispatcher.Dispatch =>
      (options, handler) => {
        signals.push((options as { signal?: unknown }).signal)
        return dispatch(options, handler)
      },
  )
  return Object.assign((...args: Parameters<HourglassFetch>) => inner(...args), {
    dispatcher,
    close: () => inner.close(),
  }) as unknown as HourglassFetch
}
