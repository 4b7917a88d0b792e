import { performance } from 'node:perf_hooks'
import { describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'

// A stream whose consumer reads after the answer is whole (`result` settles
// even if nobody iterates) or reads slower than the provider sends: every
// event waits in the stream's queue. Handing them out costs the same per
// event however many wait: 100,000 queued events held the event loop 4–7 s
// (Array#shift on a large array copies it), 10,000 about 30 ms. Timed, with
// a bound far from both: linear, this is ~40–300 ms on two loaded cores.
const EVENTS = 100_000

function readyModel(n: number): ModelAdapter {
  const base = openAICompatible({ baseURL: 'http://127.0.0.1:9', apiKey: 'sk', model: 'm' })
  async function* events(): AsyncGenerator<StreamEvent> {
    for (let i = 0; i < n; i++) yield { type: 'text', text: 'a' }
    yield { type: 'finish', finishReason: 'stop', usage: { inputTokens: 1, outputTokens: n } }
  }
  return Object.assign(Object.create(base) as ModelAdapter, {
    name: 'p',
    model: 'm',
    open: async () => ({ ok: true as const, status: 200, events: events() }),
  })
}

describe('a stream read after its events have queued', () => {
  it(`hands out ${EVENTS.toLocaleString('en')} queued events in linear time`, async () => {
    const stream = callModel({
      models: [readyModel(EVENTS)],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: EVENTS + 1, stream: true },
    })
    await stream.result
    const start = performance.now()
    let read = 0
    for await (const _event of stream) read++
    const ms = performance.now() - start
    expect(read).toBe(EVENTS + 1)
    expect(ms).toBeLessThan(1500)
  }, 60_000)
})
