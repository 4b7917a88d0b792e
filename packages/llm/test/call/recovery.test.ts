import { Deadline } from '@hourglass/core'
import { anthropicErrors, openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { CONTINUE_PROMPT } from '../../src/call/recoverOutputLimit.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import {
  isOutputTruncated,
  type OutputTruncatedError,
} from '../../src/errors/OutputTruncatedError.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import type { ChatMessage, StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

const longHistory: ChatMessage[] = [
  user('old question 1'),
  { role: 'assistant', content: 'old answer 1' },
  user('old question 2'),
  { role: 'assistant', content: 'old answer 2' },
  user('the question that matters'),
]

describe('prompt_too_long recovery', () => {
  it('collapses old context first, then compacts, and the smaller history is what gets answered', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(
      anthropicErrors.promptTooLong(),
      anthropicErrors.promptTooLong(),
      reply.text('answered'),
    )
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-opus-4-6' }),
    )
    const steps: string[] = []
    const response = await callModel({
      models: [model],
      request: { messages: longHistory, maxTokens: 64 },
      recovery: {
        collapse: (messages) => {
          steps.push('collapse')
          return messages.slice(2)
        },
        compact: async (messages) => {
          steps.push('compact')
          return [user(`Summary: earlier talk. ${JSON.stringify(messages.at(-1)?.content)}`)]
        },
      },
    })
    expect(response.text).toBe('answered')
    expect(steps).toEqual(['collapse', 'compact'])
    const sizes = fake.requests.map((r) => (r.body as { messages: unknown[] }).messages.length)
    expect(sizes).toEqual([5, 3, 1])
    expect(fake.requests[2]?.rawBody).toContain('the question that matters')
  })

  it('a body one model refuses as too large while the other is overloaded still gets the steps, and is answered smaller', async () => {
    const claude = await fakes.start({ dialect: 'anthropic' })
    claude.enqueue(anthropicErrors.requestTooLarge(), reply.text('served after collapse'))
    const busy = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.serverError({ status: 503 }),
    })
    const steps: string[] = []
    const text = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: claude.baseURL, apiKey: 'a', model: 'claude-x' })),
        fakes.adapter(openAICompatible({ baseURL: busy.baseURL, apiKey: 'o', model: 'gpt-4o' })),
      ],
      request: { messages: longHistory, maxTokens: 8 },
      recovery: {
        collapse: (messages) => {
          steps.push('collapse')
          return messages.slice(-1)
        },
      },
      limits: { admission: false },
      retry: { maxAttempts: 1 },
    }).then(
      (r) => r.text,
      (e: unknown) => String(e),
    )
    expect({ steps, text }).toEqual({ steps: ['collapse'], text: 'served after collapse' })
  })

  it('surfaces the refusal after collapse and compaction both fail, naming them', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: openAIErrors.contextTooLong() })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const error = await callModel({
      models: [model],
      request: { messages: longHistory, maxTokens: 64 },
      recovery: { collapse: (m) => m.slice(1), compact: (m) => m.slice(-1) },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'context_too_long', recoveries: ['collapse', 'compact'] })
    expect(fake.requests).toHaveLength(3)
  })

  it('after a fallback, names every model of every pass, and why each gave up', async () => {
    const busy = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const small = await fakes.start({ dialect: 'openai', reply: openAIErrors.contextTooLong() })
    const models = [
      fakes.adapter(anthropic({ baseURL: busy.baseURL, apiKey: 'k', model: 'claude-opus-4-6' })),
      fakes.adapter(openAICompatible({ baseURL: small.baseURL, apiKey: 'k', model: 'gpt-4o' })),
    ]
    const error = await callModel({
      models,
      request: { messages: longHistory, maxTokens: 64 },
      recovery: { collapse: (m) => m.slice(1) },
      // Each pass meets the overload afresh: no cooldown carried between them.
      limits: { admission: false },
      retry: { max529Retries: 0 },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    if (!isRequestRejected(error)) return
    expect(error).toMatchObject({ recoveries: ['collapse'], attempts: 4 })
    expect(error.causes.map((c) => `${c.provider}/${c.model}`)).toEqual([
      'anthropic/claude-opus-4-6',
      'openai/gpt-4o',
      'anthropic/claude-opus-4-6',
      'openai/gpt-4o',
    ])
    expect(error.message).toContain('anthropic/claude-opus-4-6: overloaded (HTTP 529')
  })
})

describe('max_tokens recovery', () => {
  it('raises the cap once, then asks the model to continue and joins the parts', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('The first try was cut', { finishReason: 'length' }),
      reply.text('A longer try, also cut ', { finishReason: 'length' }),
      reply.text('and here is the end.'),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const response = await callModel({
      models: [model],
      request: { messages: [user('Write a long answer.')], maxTokens: 50 },
      recovery: { maxTokensCeiling: 100 },
    })
    expect(response.text).toBe('A longer try, also cut and here is the end.')
    expect(response.finishReason).toBe('stop')
    const bodies = fake.requests.map(
      (r) =>
        r.body as {
          max_completion_tokens: number
          messages: Array<{ role: string; content: string }>
        },
    )
    expect(bodies.map((b) => b.max_completion_tokens)).toEqual([50, 100, 100])
    expect(bodies[2]?.messages.slice(-2)).toEqual([
      { role: 'assistant', content: 'A longer try, also cut ' },
      { role: 'user', content: CONTINUE_PROMPT },
    ])
    // A continuation is a new operation: its own Idempotency-Key.
    const keys = new Set(fake.requests.map((r) => r.headers['idempotency-key']))
    expect(keys.size).toBe(3)
  })

  it("the answer's usage counts every generation it took, the one cut before the cap was raised included", async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const usage = (inputTokens: number, outputTokens: number) => ({ inputTokens, outputTokens })
    fake.enqueue(
      reply.text('cut', { finishReason: 'length', usage: usage(10, 50) }),
      reply.text('whole', { usage: usage(10, 70) }),
      reply.text('cut', { finishReason: 'length', usage: usage(10, 50) }),
      reply.text('cut again ', { finishReason: 'length', usage: usage(10, 100) }),
      reply.text('and the end.', { usage: usage(30, 20) }),
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const request = { messages: [user('Write a long answer.')], maxTokens: 50 }
    // Raised cap, answered whole: both generations were billed.
    const raised = await callModel({ models: [model], request })
    expect(raised.text).toBe('whole')
    // toMatchObject: OpenAI also reports its zero cache and reasoning counts.
    expect(raised.usage).toMatchObject(usage(20, 120))
    // Raised cap, then a continuation: all three.
    const continued = await callModel({ models: [model], request })
    expect(continued.text).toBe('cut again and the end.')
    expect(continued.usage).toMatchObject(usage(50, 170))
    expect(fake.requests).toHaveLength(5)
  })

  it('surfaces OutputTruncatedError with everything produced once the recovery limit (3) is spent', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('cut ', { finishReason: 'length' }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const error = await callModel({
      models: [model],
      request: { messages: [user('Go on forever.')], maxTokens: 10 },
    }).catch((e: unknown) => e)
    expect(isOutputTruncated(error)).toBe(true)
    expect(error).toMatchObject({ recoveries: ['raise-cap', 'continue', 'continue'] })
    expect((error as { response: { text: string } }).response.text).toBe('cut cut cut ')
    expect(fake.requests).toHaveLength(4)
  })

  // A caller whose maxTokens is the model's own output maximum: the raised
  // cap (2× by default) is refused with a 400, which no cap of the caller's
  // could avoid. It used to end the call with RequestRejectedError, the cut
  // answer already billed (8192 tokens) lost; the recovery now goes on with
  // the cap the model accepted.
  it("a raised cap past the model's maximum output is dropped: the recovery continues with the cap accepted", async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(
      reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 8192 },
      }),
      anthropicErrors.invalidRequest(
        'max_tokens: 16384 > 8192, which is the maximum allowed number of output tokens for claude-3-5-sonnet-20240620',
      ),
      reply.text(' the essay.', { usage: { inputTokens: 20, outputTokens: 4 } }),
    )
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-3-5-sonnet-20240620' }),
    )
    const response = await callModel({
      models: [model],
      request: { messages: [user('Write an essay.')], maxTokens: 8192 },
    })
    expect(response.text).toBe('The first half of the essay.')
    expect(response.finishReason).toBe('stop')
    // Both answers were billed and are counted; the refusal was not.
    expect(response.usage).toMatchObject({ inputTokens: 30, outputTokens: 8196 })
    const bodies = fake.requests.map(
      (r) => r.body as { max_tokens: number; messages: Array<{ role: string }> },
    )
    expect(bodies.map((b) => b.max_tokens)).toEqual([8192, 16384, 8192])
    expect(bodies[2]?.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
  })

  // The prompt and the raised cap past the context window: a continuation
  // (the prompt, the cut answer and the accepted cap) needs more room still,
  // and would be refused too. The cut answer, paid for, is what comes back —
  // and the prompt, which fitted, is not shrunk for the cap's sake.
  it('a raised cap that the prompt no longer fits the context window beside ends the recovery with the cut answer, the history not shrunk', async () => {
    const fake = await fakes.start({ dialect: 'anthropic' })
    fake.enqueue(
      reply.text('cut ', { finishReason: 'length' }),
      anthropicErrors.contextLimitWithMaxTokens(),
    )
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-sonnet-4-5' }),
    )
    const shrunk: number[] = []
    const error = await callModel({
      models: [model],
      request: { messages: [user('Write an essay.')], maxTokens: 32_000 },
      recovery: {
        collapse: (messages) => {
          shrunk.push(messages.length)
          return messages
        },
      },
    }).catch((e: unknown) => e)
    expect(isOutputTruncated(error)).toBe(true)
    expect(error).toMatchObject({ recoveries: [] })
    expect((error as { response: { text: string } }).response.text).toBe('cut ')
    expect(isRequestRejected((error as Error).cause)).toBe(true)
    expect(shrunk).toEqual([])
    expect(fake.requests).toHaveLength(2)
  })

  // Refusals that end the recovery with what was produced, not with the
  // refusal alone (the answers paid for lost): the window refused in the
  // cap's own words (vLLM's, TGI's), a continuation past the window, a size
  // refused against a limit, a bad request about anything else (a
  // fallback's tool schema), every model failing the step.
  it.each([
    [
      'the window, worded with the cap',
      anthropicErrors.invalidRequest(
        "'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum context length is 3000 tokens and your request has 1500 input tokens",
      ),
      100,
      isRequestRejected,
    ],
    [
      'a continuation past the window',
      anthropicErrors.contextLimitWithMaxTokens(),
      0,
      isRequestRejected,
    ],
    // Too large for a limit (a 413, a 429 "Request too large", admission's
    // TPM share) with nothing to shrink: the raised cap made it so.
    // Every model's refusal, a size among them: ModelUnavailableError.
    [
      'a raised cap too large for a limit',
      anthropicErrors.requestTooLarge(),
      100,
      isModelUnavailable,
    ],
    [
      'a bad request about something else',
      anthropicErrors.invalidRequest('tools.0.custom.input_schema: JSON schema is invalid'),
      100,
      isRequestRejected,
    ],
    // Every model failed the step (here a 429 whose wait, 120 s, is past
    // maxRetryAfterMs): the step's ModelUnavailableError alone lost the
    // answer, where admission's refusal of the same limit, known before
    // sending, keeps it.
    [
      'a rate limit whose wait does not fit',
      anthropicErrors.rateLimited({ retryAfterS: 120 }),
      100,
      isModelUnavailable,
    ],
  ] as const)(
    '%s ends the recovery with the cut answer, the refusal its cause',
    async (_, refusal, cap, isCause) => {
      const fake = await fakes.start({ dialect: 'anthropic' })
      fake.enqueue(reply.text('cut ', { finishReason: 'length' }), refusal)
      const model = fakes.adapter(
        anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-sonnet-4-5' }),
      )
      const error = await callModel({
        models: [model],
        request: { messages: [user('Write an essay.')], maxTokens: 100 },
        recovery: { maxTokensCeiling: cap === 0 ? 0 : undefined },
      }).catch((e: unknown) => e)
      expect(isOutputTruncated(error)).toBe(true)
      expect(error).toMatchObject({ recoveries: [] })
      expect((error as { response: { text: string } }).response.text).toBe('cut ')
      expect(isCause((error as Error).cause)).toBe(true)
      // The step was sent: it failed, it was not left unrun.
      expect((error as Error).message).toMatch(/; the next step failed: /)
      expect(fake.requests).toHaveLength(2)
    },
  )

  it('a content-policy refusal of the raised cap is no cap problem: it still ends the call', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('cut ', { finishReason: 'length' }), openAIErrors.contentPolicy())
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'k', model: 'gpt-4o' }),
    )
    const error = await callModel({
      models: [model],
      request: { messages: [user('Write an essay.')], maxTokens: 100 },
    }).catch((e: unknown) => e)
    expect(isRequestRejected(error)).toBe(true)
    expect(error).toMatchObject({ kind: 'content_policy' })
    expect(fake.requests).toHaveLength(2)
  })

  // A prompt that needed recovery.collapse, then an answer cut at the cap:
  // the recovery steps used to start again from the caller's original
  // history — a second 400 (not billed, but a round trip), collapse run
  // again on every step, and handed the cut answer and the continue prompt
  // too (here it kept the prompt alone: the question was lost).
  describe('after a prompt_too_long recovery', () => {
    /** Refuses more than three messages as too long; answers per `max_tokens`. */
    const tooLongPast3 =
      (answer: (maxTokens: number) => ReturnType<typeof reply.text>) =>
      (request: { body: unknown }) => {
        const body = request.body as { messages: unknown[]; max_tokens: number }
        return body.messages.length > 3 ? anthropicErrors.promptTooLong() : answer(body.max_tokens)
      }
    const bodiesOf = (fake: { requests: ReadonlyArray<{ body: unknown }> }) =>
      fake.requests.map((r) => {
        const body = r.body as { messages: Array<{ content: unknown }>; max_tokens: number }
        return { messages: body.messages.length, maxTokens: body.max_tokens }
      })

    it('the raised cap is asked of the shrunk history the model accepted, collapse run once', async () => {
      const fake = await fakes.start({
        dialect: 'anthropic',
        reply: tooLongPast3((cap) =>
          cap === 64 ? reply.text('cut ', { finishReason: 'length' }) : reply.text('whole.'),
        ),
      })
      let collapses = 0
      const response = await callModel({
        models: [
          fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-x' })),
        ],
        request: { messages: longHistory, maxTokens: 64 },
        recovery: {
          collapse: (messages) => {
            collapses++
            return messages.slice(-1)
          },
        },
      })
      expect(response.text).toBe('whole.')
      expect(collapses).toBe(1)
      expect(bodiesOf(fake)).toEqual([
        { messages: 5, maxTokens: 64 },
        { messages: 1, maxTokens: 64 },
        { messages: 1, maxTokens: 128 },
      ])
    })

    it('the continue turn follows the shrunk history, the question kept', async () => {
      const fake = await fakes.start({ dialect: 'anthropic' })
      let answers = 0
      fake.setReply(
        tooLongPast3(() =>
          ++answers === 1 ? reply.text('cut ', { finishReason: 'length' }) : reply.text('end.'),
        ),
      )
      const seen: number[] = []
      const response = await callModel({
        models: [
          fakes.adapter(anthropic({ baseURL: fake.baseURL, apiKey: 'k', model: 'claude-x' })),
        ],
        request: { messages: longHistory, maxTokens: 64 },
        recovery: {
          maxTokensCeiling: 0,
          collapse: (messages) => {
            seen.push(messages.length)
            return messages.slice(-1)
          },
        },
      })
      expect(response.text).toBe('cut end.')
      expect(seen).toEqual([5])
      expect(bodiesOf(fake)).toEqual([
        { messages: 5, maxTokens: 64 },
        { messages: 1, maxTokens: 64 },
        { messages: 3, maxTokens: 64 },
      ])
      const last = fake.requests.at(-1)?.body as { messages: Array<{ content: unknown }> }
      expect(JSON.stringify(last.messages[0])).toContain('the question that matters')
    })
  })
})

describe('a max_tokens recovery step a fallback cannot build', () => {
  // Gemini takes at most five stop sequences: its dialect refuses a request
  // with six before sending (InvalidChatRequestError), which ended the whole
  // call at the step and lost the cut answer A had been paid for — where a
  // fallback's 400 about the same request ends with what was produced.
  it('ends with the cut answer (OutputTruncatedError), the refusal its cause', async () => {
    const a = await fakes.start({ dialect: 'openai' })
    a.enqueue(
      reply.text('The first half of', {
        finishReason: 'length',
        usage: { inputTokens: 10, outputTokens: 100 },
      }),
      openAIErrors.serverError(),
    )
    const b = await fakes.start({ dialect: 'gemini', reply: reply.text('never') })
    const error = await callModel({
      models: [
        fakes.adapter(openAICompatible({ baseURL: a.baseURL, apiKey: 'sk-a', model: 'gpt-4o' })),
        fakes.adapter(gemini({ baseURL: b.baseURL, apiKey: 'k', model: 'gemini-2.5-flash' })),
      ],
      request: {
        messages: [user('write a long essay')],
        maxTokens: 100,
        stop: ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'],
      },
      retry: { maxAttempts: 1 },
      limits: { admission: false },
    }).catch((e: unknown) => e)
    expect(isOutputTruncated(error), String(error)).toBe(true)
    expect((error as OutputTruncatedError).response.text).toBe('The first half of')
    expect(isInvalidChatRequest((error as OutputTruncatedError).cause)).toBe(true)
    expect(a.requests).toHaveLength(2)
    expect(b.requests).toHaveLength(0)
  })
})

// A reasoning model that spends the whole cap thinking (OpenAI's o-series,
// Gemini 2.5) streams nothing but a `length` finish: the consumer read no
// token, so the cap is raised and the model asked again, as for a call not
// streamed. The consumer got an empty answer where the same call unstreamed
// answered.
describe('a streamed answer cut at the cap before its first token', () => {
  const request = { messages: [user('What is the answer?')], maxTokens: 12, stream: true as const }
  const readAll = async (stream: AsyncIterable<StreamEvent>) => {
    const events: StreamEvent[] = []
    for await (const event of stream) events.push(event)
    return events
  }
  const capsOf = (fake: { requests: ReadonlyArray<{ body: unknown }> }) =>
    fake.requests.map((r) => {
      const body = r.body as {
        max_completion_tokens?: number
        generationConfig?: { maxOutputTokens?: number }
      }
      return body.max_completion_tokens ?? body.generationConfig?.maxOutputTokens
    })

  it.each(['openai', 'gemini'] as const)(
    '%s: its thinking spent the cap: asked again with the cap raised, both generations counted',
    async (dialect) => {
      const fake = await fakes.start({
        dialect,
        honourOutputLimits: true,
        reply: reply.text('the answer is 42', { thinking: 'a b c d e f g h i j k l m n o p' }),
      })
      const outputs: number[] = []
      const stream = callModel({
        models: [fakes.adapterFor(dialect, fake.baseURL, 'm')],
        request,
        limits: { admission: false },
        onAttempt: (record) => outputs.push(record.outputTokens ?? Number.NaN),
      })
      const events = await readAll(stream)
      const answer = await stream.result
      expect(answer.text).toBe('the answer is 42')
      expect(answer.finishReason).toBe('stop')
      // One answer reached the consumer: no empty `length` finish before it.
      expect(events.filter((e) => e.type === 'finish')).toHaveLength(1)
      expect(capsOf(fake)).toEqual([12, 24])
      // The generation cut at the cap was billed too: counted in the finish and the result.
      const finish = events.at(-1) as StreamEvent & { type: 'finish' }
      expect(outputs).toHaveLength(2)
      expect(finish.usage?.outputTokens).toBe((outputs[0] as number) + (outputs[1] as number))
      expect(answer.usage).toEqual(finish.usage)
    },
  )

  it('a deadline cancelled during the raised step ends the call with its reason, not the empty answer', async () => {
    const fake = await fakes.start({ dialect: 'openai', honourOutputLimits: true })
    fake.enqueue(reply.text('the answer is 42', { thinking: 'a b c d e f g h i j k l m n o p' }))
    fake.enqueue(reply.hang())
    const deadline = Deadline.after(60_000)
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'm')],
      request,
      deadline,
      limits: { admission: false },
    })
    const read = readAll(stream).catch((error: unknown) => error)
    await fake.waitForRequests(2)
    const left = new Error('client left')
    deadline.cancel(left)
    expect(await read).toBe(left)
    await expect(stream.result).rejects.toBe(left)
  })

  it('one cut after a token was read is not asked again (it would restart what was shown)', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('The first half', { finishReason: 'length' }))
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'm')],
      request,
      limits: { admission: false },
    })
    const events = await readAll(stream)
    expect(events.at(-1)).toMatchObject({ type: 'finish', finishReason: 'length' })
    expect((await stream.result).text).toBe('The first half')
    expect(fake.requests).toHaveLength(1)
  })

  it("with maxRecoveries: 0 (the gateway: the cap is its client's) the answer comes as it came", async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(reply.text('', { finishReason: 'length' }))
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'm')],
      request,
      limits: { admission: false },
      recovery: { maxRecoveries: 0 },
    })
    expect(await readAll(stream)).toEqual([
      expect.objectContaining({ type: 'finish', finishReason: 'length' }),
    ])
    expect(fake.requests).toHaveLength(1)
  })

  it('a raised cap the model refuses leaves the answer that came, as it came', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('', { finishReason: 'length', usage: { inputTokens: 10, outputTokens: 12 } }),
      openAIErrors.badRequest(
        'max_tokens is too large: 24. This model supports at most 12 completion tokens.',
      ),
    )
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'm')],
      request,
      limits: { admission: false },
    })
    const events = await readAll(stream)
    expect(events).toEqual([expect.objectContaining({ type: 'finish', finishReason: 'length' })])
    const answer = await stream.result
    expect(answer).toMatchObject({ text: '', finishReason: 'length' })
    expect(answer.usage).toMatchObject({ inputTokens: 10, outputTokens: 12 })
    expect(capsOf(fake)).toEqual([12, 24])
  })
})
