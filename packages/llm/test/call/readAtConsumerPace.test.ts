import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import type { ModelAdapter, OpenResult } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'

const TOKENS = 10_000

/**
 * An adapter whose stream is `TOKENS` text events, ready at once, counting
 * how many the call pulled: the provider's body, read as fast as the call
 * asks for it.
 */
function countingModel() {
  const pulled = { count: 0, settled: false }
  const base = openAICompatible({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk', model: 'm' })
  async function* events(signal: AbortSignal): AsyncGenerator<StreamEvent> {
    for (let i = 0; i < TOKENS; i++) {
      if (signal.aborted) throw signal.reason
      pulled.count++
      yield { type: 'text', text: `token${i} ` }
    }
    yield { type: 'finish', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: TOKENS } }
  }
  const model: ModelAdapter = Object.assign(Object.create(base) as ModelAdapter, {
    name: 'p',
    model: 'm',
    open: async (_request: unknown, send: { signal: AbortSignal }): Promise<OpenResult> => ({
      ok: true,
      status: 200,
      events: events(send.signal),
    }),
  })
  return { model, pulled }
}

/** Every promise job queued so far has run (the fake's events are all ready at once). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve))

function start(model: ModelAdapter) {
  const deadline = Deadline.after(60_000, { clock: new ManualClock() })
  return callModel({
    models: [model],
    request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16, stream: true },
    deadline,
    limits: { admission: false },
    retry: { budgets: false },
  })
}

describe('ModelStream.readAtConsumerPace', () => {
  it('a consumer that stops reading stops the reading of the provider, not just its own: the rest is not held in memory', async () => {
    const { model, pulled } = countingModel()
    const stream = start(model)
    stream.readAtConsumerPace(4096)
    const events = stream[Symbol.asyncIterator]()
    const first = await events.next()
    expect(first.value).toEqual({ type: 'text', text: 'token0 ' })
    await settled()
    // 4096 characters at 64 + 8 each: some 60 events ahead of the consumer, not all 10 000.
    expect(pulled.count).toBeLessThan(200)

    // Reading on, the consumer gets every token once, in order, and the whole answer.
    let text = 'token0 '
    for (let next = await events.next(); !next.done; next = await events.next()) {
      if (next.value.type === 'text') text += next.value.text
    }
    const expected = Array.from({ length: TOKENS }, (_, i) => `token${i} `).join('')
    expect(text).toBe(expected)
    expect((await stream.result).text).toBe(expected)
    expect(pulled.count).toBe(TOKENS)
  })

  it('a paced consumer that leaves its loop ends the attempt; one that never iterates still gets `result`', async () => {
    const left = countingModel()
    const stream = start(left.model)
    stream.readAtConsumerPace(1024)
    for await (const _ of stream) break
    await expect(stream.result).rejects.toThrow(/stopped reading/)
    expect(left.pulled.count).toBeLessThan(100)

    const unread = countingModel()
    const whole = start(unread.model)
    whole.readAtConsumerPace(1024)
    expect((await whole.result).text).toHaveLength(
      Array.from({ length: TOKENS }, (_, i) => `token${i} `).join('').length,
    )
  })

  it('refuses a high-water mark that is no number ≥ 1', () => {
    const stream = start(countingModel().model)
    expect(() => stream.readAtConsumerPace(0)).toThrow(RangeError)
    expect(() => stream.readAtConsumerPace(Number.NaN)).toThrow(/highWaterMark/)
    stream.cancel()
  })

  it('the deadline ends the wait of a consumer that keeps its iterator but stops reading: result settles', async () => {
    // The deadline reaches the provider's body through fetch's interceptor
    // and aborts no signal of the call's: the parked read listened only to
    // the signal, so `result` stayed pending past the deadline (and a cost
    // budget's reservation with it).
    const clock = new ManualClock()
    const deadline = Deadline.after(1000, { clock })
    const base = openAICompatible({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk', model: 'm' })
    async function* events(send: { deadline?: Deadline | undefined }): AsyncGenerator<StreamEvent> {
      for (let i = 0; i < TOKENS; i++) {
        // As the interceptor ends a body at the deadline.
        if (send.deadline?.done === true) throw send.deadline.reason
        yield { type: 'text', text: `token${i} ` }
      }
    }
    const model: ModelAdapter = Object.assign(Object.create(base) as ModelAdapter, {
      name: 'p',
      model: 'm',
      open: async (_request: unknown, send: { deadline?: Deadline }): Promise<OpenResult> => ({
        ok: true,
        status: 200,
        events: events(send),
      }),
    })
    const stream = callModel({
      models: [model],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16, stream: true },
      deadline,
      limits: { admission: false },
      retry: { budgets: false },
    })
    stream.readAtConsumerPace(4096)
    const outcome = stream.result.then(
      () => 'resolved',
      (error: unknown) => (error as { code?: string }).code ?? String(error),
    )
    const iterator = stream[Symbol.asyncIterator]()
    await iterator.next()
    await settled()
    clock.advance(1000)
    await settled()
    // Broken: still pending here, for good.
    expect(await Promise.race([outcome, settled().then(() => 'pending')])).toBe(
      'STREAM_INTERRUPTED',
    )
    await iterator.return?.()
  })
})
