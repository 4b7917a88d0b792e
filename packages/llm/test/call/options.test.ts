import { Deadline, runWithDeadline } from '@hourglass/core'
import { openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import type { ChatRequest } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request: ChatRequest = { messages: [user('hello')], maxTokens: 16 }

async function model() {
  const fake = await fakes.start({ dialect: 'openai' })
  const adapter = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
  )
  return { fake, adapter }
}

/** `{ retry: { delay: { baseDelayMs: value } } }` from `'retry.delay.baseDelayMs'`. */
function optionAt(path: string, value: number): Partial<CallModelOptions> {
  return path
    .split('.')
    .reduceRight<unknown>((inner, key) => ({ [key]: inner }), value) as Partial<CallModelOptions>
}

/** What the call threw or rejected with (refusals come at the call, before anything is sent). */
async function outcome(options: CallModelOptions): Promise<unknown> {
  try {
    const call = callModel(options) as Promise<unknown> | { result: Promise<unknown> }
    return await ('result' in call ? call.result : call)
  } catch (error) {
    return error
  }
}

describe('callModel refuses options it cannot honour, at the call, naming the option', () => {
  it.each([
    ['missing', undefined],
    ['NaN', Number.NaN],
    ['0', 0],
    ['negative', -5],
    ['fractional', 2.5],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])(
    'request.maxTokens %s is an InvalidChatRequestError (field maxTokens), and nothing is sent',
    async (_, maxTokens) => {
      const { fake, adapter } = await model()
      for (const stream of [false, true]) {
        const error = await outcome({
          models: [adapter],
          request: { messages: [user('hello')], maxTokens: maxTokens as number, stream },
          limits: { admission: false },
        })
        expect(isInvalidChatRequest(error)).toBe(true)
        expect(error).toMatchObject({ field: 'maxTokens' })
        expect((error as Error).message).toMatch(/^maxTokens: /)
      }
      expect(fake.requests).toHaveLength(0)
    },
  )

  it('without maxTokens no TPM weight is known: refused, not admitted as weightless', async () => {
    const { fake, adapter } = await model()
    const admission = new Admission({
      limits: new ProviderLimits({ limits: { openai: { tpm: 100 } }, windowMs: 60_000 }),
    })
    // Real time: the first call is answered over loopback within it, on a loaded machine too.
    using deadline = Deadline.after(10_000)
    const ask = (maxTokens: number) =>
      outcome({
        models: [adapter],
        request: { ...request, maxTokens },
        deadline,
        limits: { admission },
      })
    expect(await ask(90)).toMatchObject({ text: expect.any(String) })
    expect(isInvalidChatRequest(await ask(Number.NaN))).toBe(true)
    expect(isInvalidChatRequest(await ask(undefined as unknown as number))).toBe(true)
    expect(fake.requests).toHaveLength(1)
  })

  it.each([
    ['recovery.maxRecoveries', Number.NaN],
    ['recovery.maxRecoveries', -1],
    ['recovery.maxRecoveries', 1.5],
    ['recovery.maxTokensCeiling', Number.NaN],
    ['recovery.maxTokensCeiling', 100.5],
    ['retry.maxAttempts', Number.NaN],
    ['retry.max529Retries', Number.NaN],
    ['retry.max529Retries', -1],
    ['retry.minAttemptMs', Number.NaN],
    ['retry.maxRetryAfterMs', Number.NaN],
    ['retry.maxRetryAfterMs', -1],
    ['retry.maxRetryAfterMs', Number.POSITIVE_INFINITY],
    ['retry.delay.baseDelayMs', Number.NaN],
    ['retry.delay.baseDelayMs', -5000],
    ['retry.delay.baseDelayMs', Number.POSITIVE_INFINITY],
    ['retry.delay.maxDelayMs', Number.NaN],
    ['retry.delay.overloadJitterMs', Number.POSITIVE_INFINITY],
    ['retry.delay.jitterRatio', -1],
    ['retry.delay.overloadFloorMs', Number.NaN],
    ['retry.delay.overloadJitterMs', -1],
    ['retry.delay.hintJitterRatio', Number.NaN],
    ['firstTokenTimeoutMs', Number.NaN],
    ['firstTokenTimeoutMs', -1],
  ])('%s = %s is a RangeError naming it, and nothing is sent', async (name, value) => {
    const { fake, adapter } = await model()
    // A 500, then answers always cut at the cap: a NaN count or wait would
    // otherwise be given a meaning (endless paid recoveries, no backoff).
    fake.enqueue(openAIErrors.serverError())
    fake.setReply(reply.text('more', { finishReason: 'length' }))
    using deadline = Deadline.after(1000)
    const error = await outcome(
      Object.assign(
        { models: [adapter], request, deadline, limits: { admission: false } },
        optionAt(name, value),
      ),
    )
    expect(error).toBeInstanceOf(RangeError)
    expect((error as Error).message).toContain(`callModel: ${name} must be`)
    expect(fake.requests).toHaveLength(0)
  })

  it('retry.delay.random must be a function; a count that is no number is a TypeError', async () => {
    const { adapter } = await model()
    const base = { models: [adapter], request }
    const random = await outcome({
      ...base,
      retry: { delay: { random: 0.5 as unknown as () => number } },
    })
    expect(random).toBeInstanceOf(TypeError)
    expect((random as Error).message).toMatch(/retry\.delay\.random must be a function/)
    const count = await outcome({ ...base, retry: { maxAttempts: '3' as unknown as number } })
    expect(count).toBeInstanceOf(TypeError)
    expect((count as Error).message).toMatch(
      /retry\.maxAttempts must be a number \(clamped to 1–10\), got '3' \(a string\)/,
    )
  })

  it('retry.maxAttempts out of range is clamped to 1–10 as documented, not refused', async () => {
    const { fake, adapter } = await model()
    fake.setReply(openAIErrors.serverError())
    const error = await outcome({
      models: [adapter],
      request,
      limits: { admission: false },
      retry: { maxAttempts: 0, budgets: false },
    })
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE', attempts: 1 })
  })

  it.each([
    [
      'models: undefined',
      () => ({ request }),
      /models must list at least one model adapter, got undefined/,
    ],
    [
      'models: []',
      () => ({ models: [], request }),
      /models must list at least one model adapter, got an array$/,
    ],
    [
      'models: [adapter, null]',
      (a: ModelAdapter) => ({ models: [a, null], request }),
      /models\[1\] must be a model adapter .*, got null/,
    ],
    [
      'request: undefined',
      (a: ModelAdapter) => ({ models: [a] }),
      /request must be a ChatRequest .*, got undefined/,
    ],
    ['options: undefined', () => undefined, /options must be an object, got undefined/],
  ])(
    '%s is a TypeError naming the option, not "Cannot read properties…"',
    async (_, options, message) => {
      const { fake, adapter } = await model()
      const error = await outcome(options(adapter) as unknown as CallModelOptions)
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toMatch(/^callModel: /)
      expect((error as Error).message).toMatch(message)
      expect(fake.requests).toHaveLength(0)
    },
  )

  it('request.messages that is not an array is an InvalidChatRequestError (field messages), not three network retries', async () => {
    const { fake, adapter } = await model()
    const error = await outcome({
      models: [adapter],
      request: { messages: null as unknown as ChatRequest['messages'], maxTokens: 16 },
    })
    expect(isInvalidChatRequest(error)).toBe(true)
    expect(error).toMatchObject({ field: 'messages' })
    expect(fake.requests).toHaveLength(0)
  })

  it('a refusal comes where every failure of the call does: the promise, or the stream’s result and iterator', async () => {
    const { fake, adapter } = await model()
    const bad = { messages: [user('hello')], maxTokens: Number.NaN }
    const call = callModel({ models: [adapter], request: bad })
    await expect(call).rejects.toMatchObject({ code: 'INVALID_CHAT_REQUEST', field: 'maxTokens' })
    const stream = callModel({ models: [adapter], request: { ...bad, stream: true } })
    await expect(stream.result).rejects.toMatchObject({ field: 'maxTokens' })
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toMatchObject({ field: 'maxTokens' })
    expect(fake.requests).toHaveLength(0)
  })

  it('valid knobs at their edges are accepted: 0 where 0 has a meaning', async () => {
    const { fake, adapter } = await model()
    const response = await callModel({
      models: [adapter as ModelAdapter],
      request,
      firstTokenTimeoutMs: 0,
      retry: {
        maxAttempts: 1,
        max529Retries: 0,
        minAttemptMs: 0,
        maxRetryAfterMs: 0,
        delay: { jitterRatio: 0 },
      },
      recovery: { maxRecoveries: 0, maxTokensCeiling: 0 },
    })
    expect(response.text).toBe('Hello from the fake provider.')
    expect(fake.requests).toHaveLength(1)
  })
  it('deadline: false is none, as in core (`{ deadline: useIt && req.deadline }`): not even the ambient one', async () => {
    const { fake, adapter } = await model()
    const spent = Deadline.after(0)
    const call = (stream: boolean) =>
      runWithDeadline(spent, () =>
        outcome({
          models: [adapter],
          request: { ...request, stream },
          deadline: false,
          limits: { admission: false },
        }),
      )
    expect(await call(false)).toMatchObject({ text: 'Hello from the fake provider.' })
    expect(await call(true)).toMatchObject({ text: 'Hello from the fake provider.' })
    expect(fake.requests).toHaveLength(2)
  })
})
