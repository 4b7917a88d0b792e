import diagnostics from 'node:diagnostics_channel'
import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import { classify } from '../../src/admission/slot.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import type { CallModelOptions } from '../../src/call/CallModelOptions.js'
import { callModel } from '../../src/call/callModel.js'
import { targetOf } from '../../src/call/outlook.js'
import { type LlmCooldownMessage, llmChannels } from '../../src/channels.js'
import { dialects } from '../../src/dialects/dialects.js'
import { limitKindOf } from '../../src/errors/limitKindOf.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import { decideRetry } from '../../src/retry/decideRetry.js'
import { useFakes, user } from '../call/support/fakes.js'
import { errorOver } from '../dialects/support/errorOver.js'
import { TOO_LARGE, TOO_LARGE_HEADERS } from '../dialects/support/tooLarge.js'
import { drive, WaitClock } from '../support/waitClock.js'

const fakes = useFakes()

/** Dated models name the limit's family (continue#11717); some answers name no organisation (vanna-flask#11). */
const VARIANTS = [
  [
    'Request too large for gpt-4.1-2025-04-14 (for limit gpt-4.1) in organization org-lFXO45OIovvTfxhxkzQlewnD on tokens per min (TPM): Limit 30000, Requested 37313. The input or output tokens must be reduced in order to run successfully.',
    30_000,
    37_313,
  ],
  [
    'Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 342389. The input or output tokens must be reduced in order to run successfully.',
    30_000,
    342_389,
  ],
] as const

/** Groq (OpenAI-compatible) sends the same words and code on a 413 (gpt-researcher#985). */
const GROQ_TOO_LARGE = {
  error: {
    message:
      'Request too large for model `llama-3.3-70b-versatile` in organization `org_01jp8byqwpfx9sp1m0dbhb6a1e` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again.',
    type: 'tokens',
    code: 'rate_limit_exceeded',
  },
}

const EXCEEDS = "the request alone (36278 tokens) exceeds this model's TPM limit (30000 tokens)"

let unsubscribe: (() => void) | undefined
afterEach(() => {
  unsubscribe?.()
  unsubscribe = undefined
})

/** Every cooldown message published until the test ends. */
function cooldowns(): LlmCooldownMessage[] {
  const seen: LlmCooldownMessage[] = []
  const listener = (message: unknown) => seen.push(message as LlmCooldownMessage)
  diagnostics.subscribe(llmChannels.cooldown.name, listener)
  unsubscribe = () => diagnostics.unsubscribe(llmChannels.cooldown.name, listener)
  return seen
}

describe('request_too_large: bigger than the model’s whole limit, served by a larger one', () => {
  it('OpenAI’s 429 "Request too large … on tokens per min" is request_too_large, with the limit and the size', async () => {
    const e = dialects.openai.normalizeError(
      await errorOver(429, JSON.stringify(TOO_LARGE), TOO_LARGE_HEADERS),
    )
    expect(e).toMatchObject({
      kind: 'request_too_large',
      retryable: false,
      status: 429,
      providerCode: 'rate_limit_exceeded',
      overLimit: { limit: 'TPM', limitTokens: 30_000, requestedTokens: 36_278 },
    })
    // The token window's reset is no wait for this request.
    expect(e?.retryAfterMs).toBeUndefined()
    for (const [message, limitTokens, requestedTokens] of VARIANTS) {
      const v = dialects.openai.normalizeError({
        status: 429,
        body: JSON.stringify({ error: { ...TOO_LARGE.error, message } }),
      })
      expect(v, message).toMatchObject({
        kind: 'request_too_large',
        overLimit: { limit: 'TPM', limitTokens, requestedTokens },
      })
    }
    const groq = dialects.openai.normalizeError({
      status: 413,
      body: JSON.stringify(GROQ_TOO_LARGE),
    })
    expect(groq).toMatchObject({
      kind: 'request_too_large',
      retryable: false,
      status: 413,
      overLimit: { limit: 'TPM', limitTokens: 6000, requestedTokens: 14_810 },
    })
    // Neither a limit admission cools for, nor a refusal that ends the call.
    expect(limitKindOf(e ?? { kind: '' })).toBeUndefined()
    expect(classify({ ok: false, error: { kind: 'request_too_large', status: 429 } })).toBe(
      'answered',
    )
  })

  it('decideRetry falls back (why not-retryable), naming the limit and the size; with no model left it fails', () => {
    const error = dialects.openai.normalizeError({ status: 429, body: JSON.stringify(TOO_LARGE) })
    if (error === undefined) throw new Error('not an error')
    const fallback = decideRetry({ error, attempt: 1, hasFallback: true })
    expect(fallback).toEqual({
      action: 'fallback',
      why: 'not-retryable',
      reason: `request_too_large (HTTP 429, rate_limit_exceeded): ${EXCEEDS}; no wait lifts it: not retried on this model`,
    })
    expect(decideRetry({ error, attempt: 1, hasFallback: false })).toMatchObject({
      action: 'fail',
      why: 'not-retryable',
    })
    // Not retried here even when the server says a retry may help.
    const told = decideRetry({ error: { ...error, retryable: true }, attempt: 1 })
    expect(told).toMatchObject({ action: 'fail', why: 'not-retryable' })
  })

  it('through callModel: falls back to the next model at once; the first model’s key cools for nobody', async () => {
    const clock = new WaitClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const seen = cooldowns()
    const small = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        JSON.stringify(r.body).length > 1_000
          ? reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS)
          : reply.text('from the small tier'),
    })
    const large = await fakes.start({ dialect: 'openai', reply: reply.text('from the large tier') })
    const first = fakes.adapter(
      openAICompatible({ baseURL: small.baseURL, apiKey: 'sk-small-000001', model: 'gpt-4o' }),
    )
    const second = fakes.adapter(
      openAICompatible({ baseURL: large.baseURL, apiKey: 'sk-large-000001', model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const call = (
      models: ModelAdapter[],
      content: string,
      onAttempt?: CallModelOptions['onAttempt'],
    ) =>
      callModel({
        models,
        request: { messages: [user(content)], maxTokens: 16 },
        deadline,
        limits: { admission },
        onAttempt,
      })
    const records: AttemptRecord[] = []
    const [big] = await drive(clock, [
      call([first, second], 'word '.repeat(1_000), (r) => records.push(r)),
    ])
    expect(big?.status === 'fulfilled' ? big.value.text : big?.reason).toBe('from the large tier')
    expect(records.map((r) => [r.provider, r.errorKind, r.decision, r.why])).toEqual([
      ['openai', 'request_too_large', 'fallback', 'not-retryable'],
      ['openai', undefined, 'success', undefined],
    ])
    expect(records[0]?.reason).toContain(EXCEEDS)
    expect(small.requests).toHaveLength(1)
    expect(large.requests).toHaveLength(1)

    // No cooldown started: the small tier's next calls go at once.
    expect(seen.filter((m) => m.state === 'start')).toEqual([])
    expect(admission.forecast(targetOf(first)).waitMs).toBe(0)
    const honest = await drive(clock, [call([first], 'hi'), call([first], 'hi')])
    expect(honest.map((r) => (r.status === 'fulfilled' ? r.value.text : r.reason))).toEqual([
      'from the small tier',
      'from the small tier',
    ])
    expect(small.requests).toHaveLength(3)
    expect(clock.now()).toBe(1_000)
  })

  it('with no model left it fails once, as ModelUnavailableError naming the limit and the size', async () => {
    const clock = new WaitClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS),
    })
    const only = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-only-0000001', model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const [result] = await drive(clock, [
      callModel({
        models: [only],
        request: { messages: [user('hi')], maxTokens: 16 },
        deadline,
        limits: { admission },
      }),
    ])
    const error = result?.status === 'rejected' ? result.reason : undefined
    expect(isModelUnavailable(error)).toBe(true)
    expect(isRequestRejected(error)).toBe(false)
    expect(String(error?.message)).toContain(EXCEEDS)
    expect(fake.requests).toHaveLength(1)
    expect(clock.now()).toBe(1_000)
  })

  it('refused by every model, the request is compacted and sent again, as for a prompt too long', async () => {
    const clock = new WaitClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        JSON.stringify(r.body).length > 1_000
          ? reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS)
          : reply.text('compacted'),
    })
    const only = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk-only-0000001', model: 'gpt-4o' }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const [result] = await drive(clock, [
      callModel({
        models: [only],
        request: { messages: [user('word '.repeat(1_000))], maxTokens: 16 },
        deadline,
        limits: { admission },
        recovery: { compact: () => [user('short')] },
      }),
    ])
    expect(result?.status === 'fulfilled' ? result.value.text : result?.reason).toBe('compacted')
    expect(fake.requests).toHaveLength(2)
  })
})
