import { anthropicErrors, geminiErrors, openAIErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { gemini } from '../../src/adapters/gemini.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { isRequestRejected } from '../../src/errors/RequestRejectedError.js'
import type { ChatMessage } from '../../src/types.js'
import { FAST_RETRIES, useFakes } from './support/fakes.js'

const fakes = useFakes()

const history: ChatMessage[] = [
  { role: 'user', content: 'What is 17 × 23?' },
  {
    role: 'assistant',
    content: [
      {
        type: 'thinking',
        thinking: '17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391',
        signature: 'sig-claude-opus-abc123',
      },
      { type: 'text', text: '391' },
    ],
  },
  { role: 'user', content: 'And divided by 17?' },
]

describe('fallback', () => {
  it('re-sends the same history to the fallback with thinking signatures stripped and thinking text kept', async () => {
    const claude = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const deepseekFake = await fakes.start({ dialect: 'deepseek', reply: reply.text('23') })
    const primary = fakes.adapter(
      anthropic({ baseURL: claude.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const fallback = fakes.adapter(
      openAICompatible({
        baseURL: deepseekFake.baseURL,
        apiKey: 'sk-ds',
        model: 'deepseek-reasoner',
        dialect: 'deepseek',
        replayThinking: true,
      }),
    )
    const response = await callModel({
      models: [primary, fallback],
      request: { messages: history, maxTokens: 128 },
      retry: { max529Retries: 1, delay: FAST_RETRIES },
    })
    expect(response.text).toBe('23')

    // The primary got its own signature back, as Anthropic requires.
    const sentToPrimary = claude.requests[0]?.body as { messages: Array<{ content: unknown }> }
    expect(JSON.stringify(sentToPrimary.messages)).toContain('sig-claude-opus-abc123')
    // An overload with a ready fallback goes to the fallback at once.
    expect(claude.requests).toHaveLength(1)

    // The fallback got the same turns, the thinking text without the signature.
    expect(deepseekFake.requests).toHaveLength(1)
    const sent = deepseekFake.requests[0]?.body as { messages: Array<Record<string, unknown>> }
    expect(sent.messages.map((m) => m['role'])).toEqual(['user', 'assistant', 'user'])
    expect(sent.messages[1]).toMatchObject({
      content: '391',
      reasoning_content: '17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391',
    })
    expect(deepseekFake.requests[0]?.rawBody).not.toContain('sig-claude-opus-abc123')
    expect(deepseekFake.requests[0]?.headers['idempotency-key']).toBe(
      claude.requests[0]?.headers['idempotency-key'],
    )
  })

  it('leaves the caller’s history untouched', async () => {
    const failing = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.apiError() })
    const backupFake = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const primary = fakes.adapter(
      anthropic({ baseURL: failing.baseURL, apiKey: 'k', model: 'claude-opus-4-6', name: 'a' }),
    )
    const backup = fakes.adapter(
      anthropic({ baseURL: backupFake.baseURL, apiKey: 'k', model: 'claude-haiku-4-5', name: 'b' }),
    )
    const before = JSON.stringify(history)
    await callModel({
      models: [primary, backup],
      request: { messages: history, maxTokens: 64 },
      retry: { maxAttempts: 1 },
    })
    expect(JSON.stringify(history)).toBe(before)
    // Anthropic refuses unsigned thinking, so the other Claude model gets the turn without it.
    expect(backupFake.requests[0]?.rawBody).not.toContain('signature')
    expect(backupFake.requests[0]?.rawBody).toContain('And divided by 17?')
  })

  it("a proxy's HTML 400 page in front of a provider (its misconfiguration, not the request's fault) goes to the fallback, the page's model not asked again", async () => {
    const nginx =
      '<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>The plain HTTP request was sent to HTTPS port</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n'
    const proxied = await fakes.start({
      dialect: 'openai',
      reply: reply.error(400, nginx, { 'content-type': 'text/html' }),
    })
    const backupFake = await fakes.start({ dialect: 'anthropic', reply: reply.text('ok') })
    const records: AttemptRecord[] = []
    const response = await callModel({
      models: [
        fakes.adapter(openAICompatible({ baseURL: proxied.baseURL, apiKey: 'sk', model: 'gpt-5' })),
        fakes.adapter(
          anthropic({ baseURL: backupFake.baseURL, apiKey: 'sk', model: 'claude-opus-4-6' }),
        ),
      ],
      request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
      retry: { delay: FAST_RETRIES },
      onAttempt: (record) => records.push(record),
    })
    expect(response.text).toBe('ok')
    // The same proxy answers the same page: asked once.
    expect(proxied.requests).toHaveLength(1)
    expect(records[0]).toMatchObject({
      provider: 'openai',
      status: 400,
      errorKind: 'server_error',
      decision: 'fallback',
    })
  })

  it('a refusal after fallbacks names every model tried and why each gave up, not only the one that refused', async () => {
    const gone = await fakes.start({
      dialect: 'openai',
      reply: openAIErrors.modelNotFound('gpt-5'),
    })
    const busy = await fakes.start({ dialect: 'anthropic', reply: anthropicErrors.overloaded() })
    const small = await fakes.start({ dialect: 'openai', reply: openAIErrors.contextTooLong() })
    const models = [
      fakes.adapter(openAICompatible({ baseURL: gone.baseURL, apiKey: 'sk', model: 'gpt-5' })),
      fakes.adapter(anthropic({ baseURL: busy.baseURL, apiKey: 'sk', model: 'claude-opus-4-6' })),
      fakes.adapter(
        openAICompatible({
          baseURL: small.baseURL,
          apiKey: 'sk',
          model: 'gpt-4o-mini',
          name: 'mini',
        }),
      ),
    ]
    const error = await callModel({
      models,
      request: { messages: history, maxTokens: 64 },
      retry: { max529Retries: 0, delay: FAST_RETRIES },
    }).catch((e: unknown) => e)

    expect(isRequestRejected(error)).toBe(true)
    if (!isRequestRejected(error)) return
    // The refusal itself is still the last model's: what the client must fix.
    expect(error).toMatchObject({
      kind: 'context_too_long',
      provider: 'mini',
      model: 'gpt-4o-mini',
      attempts: 3,
    })
    // Every model tried, in order, with its attempts, its last error and the policy's reason.
    expect(
      error.causes.map((c) => [
        `${c.provider}/${c.model}`,
        c.attempts,
        isProviderError(c.cause) ? c.cause.kind : c.cause,
      ]),
    ).toEqual([
      ['openai/gpt-5', 1, 'not_found'],
      ['anthropic/claude-opus-4-6', 1, 'overloaded'],
      ['mini/gpt-4o-mini', 1, 'context_too_long'],
    ])
    expect(error.causes.map((c) => c.reason)).toEqual([
      expect.stringMatching(/^not_found \(HTTP 404, model_not_found\) is not retryable/),
      expect.stringMatching(/^overloaded \(HTTP 529/),
      expect.stringMatching(/^context_too_long \(HTTP 400.*never retried/),
    ])
    // And the message a log line shows names them too.
    expect(error.message).toMatch(/^request rejected by mini\/gpt-4o-mini: context_too_long/)
    expect(error.message).toContain('openai/gpt-5: not_found (HTTP 404')
    expect(error.message).toContain('anthropic/claude-opus-4-6: overloaded (HTTP 529')
  })

  // The account is refused, not the request: Anthropic's spend limit and a
  // disabled organisation (400 invalid_request_error, anthropics/claude-code
  // #38035, #19028), Gemini's spent prepaid balance (429 RESOURCE_EXHAUSTED,
  // discuss.ai.google.dev/t/170539) and free tier unavailable where it calls
  // from (400 FAILED_PRECONDITION, ai.google.dev/gemini-api/docs/troubleshooting).
  // Each goes to the next model at once, and is not sent again to this one.
  const accountRefusals = [
    [
      'Anthropic 400 spend limit',
      'anthropic',
      anthropicErrors.usageLimitReached(),
      'quota_exhausted',
    ],
    [
      'Anthropic 400 organization disabled',
      'anthropic',
      anthropicErrors.organizationDisabled(),
      'auth',
    ],
    [
      'Gemini 429 prepayment credits depleted',
      'gemini',
      geminiErrors.prepaymentDepleted(),
      'quota_exhausted',
    ],
    [
      'Gemini 400 FAILED_PRECONDITION',
      'gemini',
      geminiErrors.freeTierUnavailable(),
      'quota_exhausted',
    ],
  ] as const
  for (const [label, dialect, refusal, kind] of accountRefusals) {
    it(`${label}: ${kind}, the next model at once, not blamed on the request`, async () => {
      const refusing = await fakes.start({ dialect, reply: refusal })
      const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('ok') })
      const options = { baseURL: refusing.baseURL, apiKey: 'sk-primary', model: 'primary' }
      const primary = fakes.adapter(dialect === 'anthropic' ? anthropic(options) : gemini(options))
      const backup = fakes.adapter(
        openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'sk-b', model: 'gpt-4o' }),
      )
      const kinds: unknown[] = []
      const response = await callModel({
        models: [primary, backup],
        request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 16 },
        retry: { delay: FAST_RETRIES },
        onAttempt: (r) => kinds.push(r.errorKind),
      }).catch((e: unknown) => e)
      expect(isRequestRejected(response)).toBe(false)
      expect(response).toMatchObject({ text: 'ok' })
      expect(kinds).toEqual([kind, undefined])
      expect(refusing.requests).toHaveLength(1)
      expect(backupFake.requests).toHaveLength(1)
    })
  }

  it('an answer that ended in an error before the caller got any of it is a failed attempt: the fallback answers, whole and streamed', async () => {
    // Gemini's MALFORMED_FUNCTION_CALL: no part, a finish reason of its own.
    const malformed = {
      responseId: 'r1',
      modelVersion: 'gemini-2.5-flash',
      candidates: [
        { content: { role: 'model', parts: [] }, finishReason: 'MALFORMED_FUNCTION_CALL' },
      ],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 0, totalTokenCount: 5 },
    }
    const geminiFake = await fakes.start({ dialect: 'gemini' })
    geminiFake.enqueue(
      reply.error(200, malformed),
      reply.error(200, `data: ${JSON.stringify(malformed)}\r\n\r\n`, {
        'content-type': 'text/event-stream',
      }),
    )
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('from the fallback'),
    })
    const models = [
      fakes.adapter(
        gemini({ baseURL: geminiFake.baseURL, apiKey: 'g', model: 'gemini-2.5-flash' }),
      ),
      fakes.adapter(
        openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'o', model: 'gpt-4o-mini' }),
      ),
    ]
    const decisions: string[] = []
    const reasons: string[] = []
    const onAttempt = (r: AttemptRecord) => {
      decisions.push(`${r.provider} ${r.decision} ${r.errorKind ?? ''}`.trim())
      if (r.provider === 'gemini') reasons.push(r.reason ?? '')
    }
    const request = { messages: [{ role: 'user' as const, content: 'q' }], maxTokens: 64 }
    const whole = await callModel({ models, request, retry: { maxAttempts: 1 }, onAttempt })
    expect(whole.text, 'the whole answer').toBe('from the fallback')
    const stream = callModel({
      models,
      request: { ...request, stream: true },
      retry: { maxAttempts: 1 },
      onAttempt,
    })
    const events: string[] = []
    for await (const event of stream)
      events.push(event.type === 'finish' ? event.finishReason : event.type)
    expect((await stream.result).text, 'the streamed answer').toBe('from the fallback')
    expect(events.at(-1), 'the one finish the consumer read').toBe('stop')
    expect(events.filter((e) => e === 'error')).toEqual([])
    expect(decisions).toEqual([
      'gemini fallback server_error',
      'openai success',
      'gemini fallback server_error',
      'openai success',
    ])
    // The reason names the provider's own finish reason, not only `error`.
    for (const reason of reasons) expect(reason).toContain('finishReason:MALFORMED_FUNCTION_CALL')
    expect(reasons).toHaveLength(2)
  })

  // Both came back as `unknown`, which a gateway's client read as `stop`: a
  // cut answer taken for a whole one.
  it("Gemini's LANGUAGE is a block the caller is told of; its OTHER is cut short: the fallback answers", async () => {
    const ended = (finishReason: string) =>
      reply.error(200, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'Die Ant' }] }, finishReason }],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2 },
      })
    const geminiFake = await fakes.start({ dialect: 'gemini' })
    geminiFake.enqueue(ended('LANGUAGE'), ended('OTHER'))
    const backupFake = await fakes.start({ dialect: 'openai', reply: reply.text('the answer') })
    const models = [
      fakes.adapter(
        gemini({ baseURL: geminiFake.baseURL, apiKey: 'g', model: 'gemini-2.5-flash' }),
      ),
      fakes.adapter(
        openAICompatible({ baseURL: backupFake.baseURL, apiKey: 'o', model: 'gpt-4o-mini' }),
      ),
    ]
    const request = { messages: [{ role: 'user' as const, content: 'q' }], maxTokens: 64 }
    const blocked = await callModel({ models, request, retry: { maxAttempts: 1 } })
    expect([blocked.provider, blocked.finishReason]).toEqual(['gemini', 'content_filter'])
    const cut = await callModel({ models, request, retry: { maxAttempts: 1 } })
    expect([cut.provider, cut.text]).toEqual(['openai', 'the answer'])
  })
})
