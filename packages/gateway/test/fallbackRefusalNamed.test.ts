import { type FakeProvider, reply } from '@hourglass/testkit'
import type OpenAI from 'openai'
import { APIError } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A value only one provider refuses (an email as Anthropic's end-user id, an
 * MCP tool name for Gemini) is left to that provider when it is a fallback.
 * Reached there — its primary failed — the client is told what the same
 * refusal up front tells it: `unsupported_field`, the provider, its model,
 * and what to do. It got llm's bare message and `invalid_request` instead,
 * naming neither the provider nor the remedy.
 */
let harness: Harness
const fakes: FakeProvider[] = []
let primary: FakeProvider
let anthropic: FakeProvider
let gemini: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const a = await fakeProvider('anthropic', ['sk-a'])
  const g = await fakeProvider('gemini', ['sk-g'])
  primary = o.fake
  anthropic = a.fake
  gemini = g.fake
  fakes.push(o.fake, a.fake, g.fake)
  harness = await startHarness({
    providers: { oa: o.entry, an: a.entry, ge: g.entry },
    models: {
      'chat-a': fallback(['oa', 'gpt-4o-mini'], ['an', 'claude-sonnet-4-5']),
      'chat-g': fallback(['oa', 'gpt-4o-mini'], ['ge', 'gemini-2.5-flash']),
      // An agent framework's ReAct stop, Claude first and o3 (which answers
      // any \`stop\` 400) behind it.
      'chat-r': fallback(['an', 'claude-sonnet-4-5'], ['oa', 'o3']),
    },
    // The primary's 500 hands over at once: no backoff to wait out.
    policy: { maxAttempts: 1 },
  })
})
afterAll(async () => {
  await harness?.close()
  await Promise.all(fakes.map((f) => f.close()))
})

const MCP_TOOL = {
  type: 'function' as const,
  function: { name: '1password_read', parameters: { type: 'object', properties: {} } },
}

async function refusal(body: OpenAI.ChatCompletionCreateParams): Promise<APIError> {
  primary.enqueue(reply.error(500, { error: { message: 'boom', type: 'server_error' } }))
  const error = await harness.client.chat.completions.create(body).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(APIError)
  return error as APIError
}

describe('a fallback reached after its primary failed, refusing a value only it refuses', () => {
  for (const stream of [false, true]) {
    it(`names the provider, its model and the remedy, as the up-front refusal does (stream: ${stream})`, async () => {
      const before = anthropic.requests.length
      const error = await refusal({
        model: 'chat-a',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 20,
        user: 'alice@example.com',
        stream,
      })
      expect(error.status).toBe(400)
      expect(error.code).toBe('unsupported_field')
      expect(error.param).toBe('user')
      expect(error.message).toContain(
        'provider "an", dialect anthropic, for model "claude-sonnet-4-5"',
      )
      expect(error.message).toContain('reached as a fallback: the models before it did not answer')
      expect(error.message).toContain('remove the field or route the model elsewhere')
      expect(error.headers?.get('x-should-retry')).toBe('false')
      // Nothing was sent to the provider that refused it.
      expect(anthropic.requests.length).toBe(before)
    })
  }

  it('a Gemini fallback refusing an MCP tool name alike', async () => {
    const before = gemini.requests.length
    const error = await refusal({
      model: 'chat-g',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 20,
      tools: [MCP_TOOL],
    })
    expect(error.status).toBe(400)
    expect(error.code).toBe('unsupported_field')
    expect(error.param).toBe('tools[0].function.name')
    expect(error.message).toContain('provider "ge", dialect gemini, for model "gemini-2.5-flash"')
    expect(gemini.requests.length).toBe(before)
  })

  it("an OpenAI reasoning fallback refusing an agent framework's stop sequence alike", async () => {
    anthropic.enqueue(
      reply.error(529, { type: 'error', error: { type: 'overloaded_error', message: 'busy' } }),
    )
    const before = primary.requests.length
    const error = await harness.client.chat.completions
      .create({
        model: 'chat-r',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 20,
        stop: ['Observation:'],
      })
      .then(
        () => undefined,
        (e: unknown) => e as APIError,
      )
    expect(error).toBeInstanceOf(APIError)
    expect(error?.status).toBe(400)
    expect(error?.code).toBe('unsupported_field')
    expect(error?.param).toBe('stop')
    expect(error?.message).toContain('provider "oa", dialect openai, for model "o3"')
    expect(error?.message).toContain('reached as a fallback')
    // Nothing was sent to o3 (before, OpenAI's own 400 came back, the request spent).
    expect(primary.requests.length).toBe(before)
  })

  it('the request line names the provider that refused, with the code the client got', () => {
    const lines = harness.logs.filter((l) => l['event'] === 'request')
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) {
      expect(line).toMatchObject({ status: 400, error: 'unsupported_field' })
      expect(['an', 'ge', 'oa']).toContain(line['provider'])
    }
  })
})
