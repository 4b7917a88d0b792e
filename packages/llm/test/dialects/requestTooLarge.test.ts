import { Deadline } from '@hourglass/core'
import { anthropicErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { drive, WaitClock } from '../support/waitClock.js'
import { errorOver } from './support/errorOver.js'
import { TOO_LARGE, TOO_LARGE_HEADERS } from './support/tooLarge.js'

const fakes = useFakes()

/** Groq (OpenAI-compatible) sends the same words and code on a 413 (gpt-researcher#985, podscript#20). */
const GROQ_TOO_LARGE = {
  error: {
    message:
      'Request too large for model `llama-3.3-70b-versatile` in organization `org_01jp8byqwpfx9sp1m0dbhb6a1e` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again. Visit https://console.groq.com/docs/rate-limits for more information.',
    type: 'tokens',
    code: 'rate_limit_exceeded',
  },
}

/** A real TPM rate limit: same code and type, but a window that clears. */
const RATE_LIMITED = {
  error: {
    message:
      'Rate limit reached for gpt-4o in organization org-2itOgSdqw0DhUYp0QyLhttLL on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    type: 'tokens',
    param: null,
    code: 'rate_limit_exceeded',
  },
}

describe('"Request too large" is the request’s size, not a rate limit', () => {
  it('OpenAI’s 429 "Request too large … must be reduced" is request_too_large: not retryable, no wait', async () => {
    const e = dialects.openai.normalizeError(
      await errorOver(429, JSON.stringify(TOO_LARGE), TOO_LARGE_HEADERS),
    )
    expect(e).toMatchObject({
      kind: 'request_too_large',
      retryable: false,
      status: 429,
      providerCode: 'rate_limit_exceeded',
    })
    expect(e?.message).toMatch(/^Request too large for gpt-4o/)
    expect(e?.retryAfterMs).toBeUndefined()
  })

  // OpenAI writes its figures with thousands separators today ("Limit 30,000,
  // Requested 36,278"): read as plain digits only, the figures were lost and
  // the gateway's 413 named neither them nor max_tokens.
  it('figures with thousands separators are read: "Limit 30,000, Requested 1,036,278"', () => {
    const message = TOO_LARGE.error.message.replace(
      'Limit 30000, Requested 36278',
      'Limit 30,000, Requested 1,036,278',
    )
    const e = dialects.openai.normalizeError({
      status: 429,
      body: JSON.stringify({ error: { ...TOO_LARGE.error, message } }),
    })
    expect(e).toMatchObject({
      kind: 'request_too_large',
      overLimit: { limit: 'TPM', limitTokens: 30_000, requestedTokens: 1_036_278 },
    })
    // Not a separator: a comma in the wrong place is no figure.
    for (const odd of ['Limit 30,00, Requested 36278', 'Limit 3,0000, Requested 36278']) {
      const v = dialects.openai.normalizeError({
        status: 429,
        body: JSON.stringify({
          error: {
            ...TOO_LARGE.error,
            message: TOO_LARGE.error.message.replace('Limit 30000, Requested 36278', odd),
          },
        }),
      })
      expect(v?.overLimit, odd).toBeUndefined()
    }
  })

  it('a real "Rate limit reached" with the same code and type is still a rate limit', () => {
    const e = dialects.openai.normalizeError({ status: 429, body: JSON.stringify(RATE_LIMITED) })
    expect(e).toMatchObject({ kind: 'rate_limited', retryable: true, status: 429 })
  })

  it('Groq’s 413 with the same words and code is request_too_large too', () => {
    const e = dialects.openai.normalizeError({ status: 413, body: JSON.stringify(GROQ_TOO_LARGE) })
    expect(e).toMatchObject({ kind: 'request_too_large', retryable: false, status: 413 })
  })

  // Anthropic's 413 is its HTTP body over 32 MB (docs.claude.com/en/api/errors:
  // "Request exceeds the maximum allowed number of bytes", answered by
  // Cloudflare before the API reads it), not the context window: read as
  // context_too_long, the call ended as RequestRejectedError and the next
  // model — with a larger limit — was never asked.
  it('Anthropic’s 413 request_too_large (the body over its byte limit) is request_too_large: the next model answers', async () => {
    const e = dialects.anthropic.normalizeError(
      await errorOver(413, JSON.stringify(anthropicErrors.requestTooLarge().body)),
    )
    expect(e).toMatchObject({ kind: 'request_too_large', retryable: false, status: 413 })
    // A 413 whose body says nothing (a proxy's page) is the body's size too.
    expect(dialects.openai.normalizeError({ status: 413, body: '<html>413</html>' })).toMatchObject(
      { kind: 'request_too_large', retryable: false },
    )
    const claude = await fakes.start({ dialect: 'anthropic' })
    claude.enqueue(anthropicErrors.requestTooLarge())
    const backup = await fakes.start({ dialect: 'openai', reply: reply.text('served') })
    const answer = await callModel({
      models: [
        fakes.adapter(anthropic({ baseURL: claude.baseURL, apiKey: 'a', model: 'claude-x' })),
        fakes.adapter(openAICompatible({ baseURL: backup.baseURL, apiKey: 'o', model: 'gpt-4o' })),
      ],
      request: { messages: [user('a big one')], maxTokens: 8 },
      limits: { admission: false },
    })
    expect(answer.text).toBe('served')
  })

  it('mid-stream, and through the dialects that reuse OpenAI’s reader (DeepSeek, Doubao), it reads the same', () => {
    const frame = dialects.openai.normalizeStreamError({
      event: undefined,
      data: JSON.stringify(TOO_LARGE),
    })
    expect(frame).toMatchObject({ kind: 'request_too_large', retryable: false })
    for (const name of ['deepseek', 'doubao'] as const) {
      const e = dialects[name].normalizeError({ status: 429, body: JSON.stringify(TOO_LARGE) })
      expect(e, name).toMatchObject({ kind: 'request_too_large', retryable: false })
    }
  })

  it('through callModel: the oversized call is refused once, nothing cools, and the next honest calls go at once', async () => {
    // Waits (a cooldown, a back-off) pass on this clock only when every call is held by one.
    const clock = new WaitClock(1_000)
    const admission = new Admission({ clock, defaultNeededMs: 0, logger: { warn: () => {} } })
    const fake = await fakes.start({
      dialect: 'openai',
      reply: (r) =>
        JSON.stringify(r.body).length > 1_000
          ? reply.error(429, TOO_LARGE, TOO_LARGE_HEADERS)
          : reply.text('ok'),
    })
    const adapter = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKeys: ['sk-a-0000000001', 'sk-b-0000000002'],
        model: 'gpt-4o',
      }),
    )
    using deadline = Deadline.after(15_000, { clock })
    const call = (content: string, onAttempt?: (r: AttemptRecord) => void) =>
      callModel({
        models: [adapter],
        request: { messages: [user(content)], maxTokens: 16 },
        deadline,
        limits: { admission },
        onAttempt,
      })
    const records: AttemptRecord[] = []
    const [oversized] = await drive(clock, [call('word '.repeat(1_000), (r) => records.push(r))])
    const refused = oversized?.status === 'rejected' ? oversized.reason : undefined
    // No model left to take it: every model was tried (this one), none could serve it.
    expect.soft(isModelUnavailable(refused)).toBe(true)
    expect
      .soft(records.map((r) => [r.errorKind, r.decision]))
      .toEqual([['request_too_large', 'fail']])
    expect.soft(fake.requests).toHaveLength(1)

    // Neither key nor the model cools: the honest calls are sent at once.
    const honest = await drive(clock, [call('hi'), call('hi')])
    expect.soft(honest.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
    expect.soft(fake.requests).toHaveLength(3)
    expect.soft(clock.now() - 1_000).toBe(0)
  })
})
