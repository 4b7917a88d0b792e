import diagnostics from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { requestParamsOf, serverOf } from '../../src/call/attemptTarget.js'
import { callModel } from '../../src/call/callModel.js'
import type { LlmAttemptMessage } from '../../src/channels.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const messages: LlmAttemptMessage[] = []
const onMessage = (m: unknown) => messages.push(m as LlmAttemptMessage)
afterEach(() => {
  diagnostics.unsubscribe('hourglass:llm:attempt', onMessage)
  messages.length = 0
})

describe('the attempt message names where the request went and what it asked', () => {
  it('host, port and the parameters the caller set, on the channel; not on onAttempt’s record', async () => {
    diagnostics.subscribe('hourglass:llm:attempt', onMessage)
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('ok'))
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const records: AttemptRecord[] = []
    await callModel({
      models: [model],
      request: {
        messages: [user('hi')],
        maxTokens: 16,
        temperature: 0,
        stop: ['END'],
        extra: { seed: 3, frequency_penalty: 'high' },
      },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatchObject({
      serverAddress: '127.0.0.1',
      serverPort: Number(new URL(fake.baseURL).port),
      request: { maxTokens: 16, temperature: 0, stopSequences: ['END'], seed: 3 },
    })
    // Not a number: left out, not passed on as it came.
    expect(messages[0]?.request).not.toHaveProperty('frequencyPenalty')
    expect(records[0]).not.toHaveProperty('serverAddress')
    expect(records[0]).not.toHaveProperty('request')
  })

  it('a stream says stream: true and its firstTokenMs; a failed attempt its providerRequestId, on the channel as on the record', async () => {
    diagnostics.subscribe('hourglass:llm:attempt', onMessage)
    // The fake holds its tokens on a clock of its own; llm's moves meanwhile:
    // 300 ms of retry wait, 700 ms to the first token, 500 ms to the second.
    const fakeClock = new ManualClock()
    const fake = await fakes.start({ dialect: 'openai', clock: fakeClock })
    fake.enqueue(
      openAIErrors.serverError(),
      reply.text('one two', { firstTokenDelayMs: 10, tokenDelayMs: 10 }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const clock = new ManualClock()
    using deadline = Deadline.after(60_000, { clock })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 16, stream: true },
      deadline,
      retry: {
        delay: { baseDelayMs: 300, maxDelayMs: 300, jitterRatio: 0, random: () => 0 },
        budgets: false,
      },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    // The 500 is out and its retry waits 300 ms on llm's clock: not the streamed attempt's time.
    await expect.poll(() => messages.length, { interval: 1 }).toBe(1)
    clock.advance(300)
    // The retry is sent and its first token held.
    await expect.poll(() => fakeClock.pendingTimers, { interval: 1 }).toBe(1)
    clock.advance(700)
    fakeClock.advance(10)
    for await (const event of stream) {
      if (event.type !== 'text' || event.text !== 'one') continue
      // The first token is in: the rest of the answer takes 500 ms more.
      await expect.poll(() => fakeClock.pendingTimers, { interval: 1 }).toBe(1)
      clock.advance(500)
      fakeClock.advance(10)
    }
    expect(
      messages.map((m) => [m.decision, m.stream, m.providerRequestId, m.firstTokenMs, m.latencyMs]),
    ).toEqual([
      ['retry', true, 'req_fake500', undefined, 0],
      // From sending to the first token — not to the stream's end (1200), nor from before the wait (1000).
      ['success', true, undefined, 700, 1200],
    ])
    expect(records.map((r) => [r.providerRequestId, r.firstTokenMs, r.latencyMs])).toEqual([
      ['req_fake500', undefined, 0],
      [undefined, 700, 1200],
    ])
    // A whole answer is no stream.
    fake.enqueue(reply.text('ok'))
    await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 16 },
      limits: { admission: false },
    })
    expect(messages[2]).not.toHaveProperty('stream')
    expect(messages[2]).not.toHaveProperty('firstTokenMs')
  })

  it('a URL without a port has its scheme’s default; an IPv6 host loses its brackets', () => {
    const at = (baseURL: string | undefined) =>
      serverOf({ baseURL } as unknown as Parameters<typeof serverOf>[0])
    expect(at('https://api.openai.com/v1')).toEqual({
      serverAddress: 'api.openai.com',
      serverPort: 443,
    })
    expect(at('http://[::1]:8080')).toEqual({ serverAddress: '::1', serverPort: 8080 })
    expect(at('not a url')).toEqual({})
    expect(at(undefined)).toEqual({})
  })
})

describe('requestParamsOf: what a span keeps of a caller’s stop list', () => {
  it('a list as providers take it, whole; a hostile one, its first 16, each cut to 256 characters', () => {
    const ask = (stop: string[]) =>
      requestParamsOf({ messages: [user('hi')], maxTokens: 8, stop }).stopSequences
    expect(ask(['END', '###'])).toEqual(['END', '###'])
    const huge = ask(Array.from({ length: 200_000 }, (_, i) => `s${i}`))
    expect(huge).toHaveLength(16)
    expect(huge?.[15]).toBe('s15')
    expect(ask(['x'.repeat(1_000_000)])?.[0]).toHaveLength(256)
    // Never half an emoji: a lone surrogate is no text (OTLP turns it into U+FFFD).
    expect(ask([`${'a'.repeat(255)}😀`])?.[0]).not.toMatch(LONE_SURROGATE)
  })
})

describe('requestParamsOf: the output format asked for (gen_ai.output.type)', () => {
  it('json for response_format json_object or json_schema, text for text; nothing when none is named or its type is unknown', () => {
    const ask = (extra?: Record<string, unknown>) =>
      requestParamsOf({ messages: [user('hi')], maxTokens: 8, extra }).outputType
    expect(ask({ response_format: { type: 'json_object' } })).toBe('json')
    expect(ask({ response_format: { type: 'json_schema', json_schema: { name: 'q' } } })).toBe(
      'json',
    )
    expect(ask({ response_format: { type: 'text' } })).toBe('text')
    expect(ask({})).toBeUndefined()
    expect(ask(undefined)).toBeUndefined()
    expect(ask({ response_format: { type: 'xml' } })).toBeUndefined()
    expect(ask({ response_format: 'json' })).toBeUndefined()
    expect(ask({ response_format: null })).toBeUndefined()
  })
})

/** Half of a surrogate pair without its other half (String#isWellFormed, ES2024). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
