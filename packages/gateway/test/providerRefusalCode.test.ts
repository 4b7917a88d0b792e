import { type FakeProvider, type ProviderDialect, reply } from '@hourglass/testkit'
import { BadRequestError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A provider that refuses the request itself (a 400) says why in its own
 * code; the gateway answers in its own vocabulary (`code`) and passes the
 * provider's beside it (`provider_code`), scrubbed like the message.
 */
describe('a provider’s refusal keeps its own code', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  async function start(dialect: ProviderDialect, extra: Record<string, unknown> = {}) {
    const p = await fakeProvider(dialect, ['sk-refusal-key-0001'], extra)
    fake = p.fake
    harness = await startHarness({ providers: { p: p.entry }, models: { m: fallback(['p', 'x']) } })
  }

  const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] }
  const refusal = () =>
    harness!.client.chat.completions.create(ask).then(
      () => undefined,
      (e: unknown) => e as BadRequestError,
    )

  it('OpenAI’s invalid_value and context_length_exceeded: the gateway’s code, and the provider’s as provider_code', async () => {
    await start('openai')
    for (const [providerCode, code] of [
      ['invalid_value', 'invalid_request'],
      ['context_length_exceeded', 'context_length_exceeded'],
    ] as const) {
      fake!.enqueue(
        reply.error(400, {
          error: {
            message: `refused: ${providerCode}`,
            type: 'invalid_request_error',
            param: 'messages[0].content',
            code: providerCode,
          },
        }),
      )
      const error = await refusal()
      expect(error, providerCode).toBeInstanceOf(BadRequestError)
      expect(error, providerCode).toMatchObject({ status: 400, code })
      expect(error?.error, providerCode).toMatchObject({ code, provider_code: providerCode })
      // The field the provider named: what openai-node reads as `error.param`.
      expect(error?.param, providerCode).toBe('messages[0].content')
    }
  })

  it('Anthropic’s refusal carries its error type as provider_code', async () => {
    await start('anthropic')
    fake!.enqueue(
      reply.error(400, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'messages: at least one message is required',
        },
      }),
    )
    const error = await refusal()
    expect(error).toMatchObject({ status: 400, code: 'invalid_request' })
    expect(error?.error).toMatchObject({ provider_code: 'invalid_request_error' })
  })

  it('a configured secret the provider echoes in its code is scrubbed from provider_code', async () => {
    await start('openai', { headers: { 'x-project': 'proj-echoed-secret-0001' } })
    fake!.enqueue(
      reply.error(400, {
        error: {
          message: 'unknown project',
          type: 'invalid_request_error',
          param: null,
          code: 'unknown_project:proj-echoed-secret-0001',
        },
      }),
    )
    const error = await refusal()
    expect(error?.error).toMatchObject({ provider_code: 'unknown_project:[redacted]' })
    expect(JSON.stringify(error?.error)).not.toContain('proj-echoed-secret-0001')
  })

  it('a provider that does not know its configured model is the operator’s to fix: 502, logged at warn — not the 404 model_not_found of a model GET /v1/models does not list', async () => {
    for (const [dialect, body] of [
      [
        'openai',
        {
          error: {
            message: 'The model `x` does not exist or you do not have access to it.',
            type: 'invalid_request_error',
            param: null,
            code: 'model_not_found',
          },
        },
      ],
      ['anthropic', { type: 'error', error: { type: 'not_found_error', message: 'model: x' } }],
    ] as const) {
      await start(dialect)
      fake!.enqueue(reply.error(404, body))
      const error = await refusal()
      expect(error, dialect).toMatchObject({ status: 502, code: 'upstream_not_found' })
      expect(error?.type, dialect).toBe('server_error')
      // Asked again it fails again, until the config changes.
      expect(error?.headers?.get('x-should-retry'), dialect).toBe('false')
      const line = harness!.logs.find((l) => l.event === 'request')
      expect(line, dialect).toMatchObject({ level: 'warn', status: 502 })
      await harness!.close()
      await fake!.close()
      harness = undefined
      fake = undefined
    }
  })

  it("a proxy's HTML 400 page in front of the provider: the operator's misconfiguration, a 502 (not the client's 400), no markup or server version", async () => {
    await start('openai')
    fake!.enqueue(
      reply.error(
        400,
        '<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>The plain HTTP request was sent to HTTPS port</center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n',
        { 'content-type': 'text/html' },
      ),
    )
    const error = await refusal()
    // llm reads a web page with a bad request's status as the server's
    // failure (nothing the client can fix): fallbacks tried, then a 502.
    expect(error).toMatchObject({ status: 502 })
    expect(error?.error).toMatchObject({ code: 'upstream_error' })
    expect(String((error?.error as { message?: unknown })?.message)).not.toMatch(/[<>]|nginx/)
  })

  it("a provider's own JSON error whose words start with markup (an XML tool result it names) is quoted, not called a page", async () => {
    await start('openai')
    fake!.enqueue(
      reply.error(400, {
        error: {
          message: '<?xml version="1.0"?> in tool result 2 is not valid: unclosed <result> tag',
          type: 'invalid_request_error',
        },
      }),
    )
    const error = await refusal()
    expect(error?.error).toMatchObject({
      message: 'p: <?xml version="1.0"?> in tool result 2 is not valid: unclosed <result> tag',
    })
  })

  it('a refusal’s text passed on is one printable line: no line breaks, escapes, NUL or bidi overrides, in message, param or provider_code', async () => {
    await start('openai')
    fake!.enqueue(
      reply.error(400, {
        error: {
          message: `Invalid 'messages[0].content':\r\n  expected a string\u0000\u001b[31m red\u0007\u202eevil\u0085 next\u2028line ${'y'.repeat(900)}`,
          type: 'invalid_request_error',
          param: 'messages[0]\n.content\u0000',
          code: 'invalid\r\nvalue\u001b',
        },
      }),
    )
    const error = await refusal()
    expect(error).toMatchObject({ status: 400, code: 'invalid_request' })
    const { message = '', param, provider_code } = (error?.error ?? {}) as Record<string, string>
    expect(message).toMatch(
      /^p: Invalid 'messages\[0\]\.content': expected a string \[31m red evil next line y+…$/,
    )
    expect(message.length).toBeLessThanOrEqual(503)
    expect(param).toBe('messages[0] .content')
    expect(provider_code).toBe('invalid value')
    for (const text of [message, param, provider_code]) {
      expect(text).not.toMatch(/(?![\u200c\u200d])[\p{Cc}\p{Cf}\u2028\u2029]/u)
    }
    // A language's joiners are its words', not hidden controls: passed on as they are.
    fake!.enqueue(
      reply.error(400, {
        error: { message: 'می\u200cخواهم 👨\u200d👩\u200d👧', type: 'invalid_request_error' },
      }),
    )
    expect((await refusal())?.error).toMatchObject({
      message: 'p: می\u200cخواهم 👨\u200d👩\u200d👧',
    })
    // An organisation id is blanked; a word that starts like one is the provider's.
    fake!.enqueue(
      reply.error(400, {
        error: {
          message: 'org-level tools are off in organization org-2itOgSdqw0DhUYp0QyLhttLL',
          type: 'invalid_request_error',
          param: 'tools',
          code: 'invalid_value',
        },
      }),
    )
    expect((await refusal())?.error).toMatchObject({
      message: 'p: org-level tools are off in organization org-[redacted]',
    })
  })

  it('a failure that is not a refusal of the request has no provider_code', async () => {
    await start('openai')
    fake!.enqueue(
      reply.error(500, { error: { message: 'boom', type: 'server_error', code: 'internal' } }),
    )
    fake!.enqueue(
      reply.error(500, { error: { message: 'boom', type: 'server_error', code: 'internal' } }),
    )
    const error = await refusal()
    expect(error).toMatchObject({ status: 502 })
    expect(error?.error).not.toHaveProperty('provider_code')
  })
})
