import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * An attempt line said what the policy made of a provider's error
 * (`server_error (HTTP 500, server_error): …`), never what the provider said:
 * an operator reading why requests got 502s had no trace of its words.
 */
describe("an attempt's log line carries the provider's own message", () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  it('a 500 and a 529 before the fallback answers: each line names what its provider said', async () => {
    const openai = await fakeProvider('openai', ['openai-key-1'])
    const anthropic = await fakeProvider('anthropic', ['anthropic-key-1'])
    const gemini = await fakeProvider('gemini', ['gemini-key-1'])
    fakes.push(openai.fake, anthropic.fake, gemini.fake)
    harness = await startHarness({
      providers: { oa: openai.entry, an: anthropic.entry, ge: gemini.entry },
      models: {
        chat: fallback(['oa', 'gpt-4o-mini'], ['an', 'claude-x'], ['ge', 'gemini-x']),
      },
      policy: { maxAttempts: 1 },
    })
    openai.fake.enqueue(
      reply.error(500, {
        error: { message: 'The server had an error M500', type: 'server_error', code: null },
      }),
    )
    anthropic.fake.enqueue(
      reply.error(529, {
        type: 'error',
        error: { type: 'overloaded_error', message: 'Overloaded M529' },
      }),
    )
    gemini.fake.enqueue(reply.text('answered'))
    const completion = await harness.client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]?.message.content).toBe('answered')
    const lines = harness.logs.filter((l) => l.event === 'attempt')
    expect(lines.map((l) => [l['provider'], l['decision'], l['providerMessage']])).toEqual([
      ['oa', 'fallback', 'The server had an error M500'],
      ['an', 'fallback', 'Overloaded M529'],
    ])
    // Each failed answer's own request id (the fakes name every answer), for a support ticket.
    for (const line of lines) expect(line['providerRequestId']).toMatch(/\S/)
    expect(new Set(lines.map((l) => l['providerRequestId'])).size).toBe(2)
  })

  it('a key the provider echoes in its message is not logged', async () => {
    const openai = await fakeProvider('openai', ['sk-live-abcdefghijklmnopqrstuvwxyz123456'])
    fakes.push(openai.fake)
    harness = await startHarness({
      providers: { oa: openai.entry },
      models: { chat: fallback(['oa', 'gpt-4o-mini']) },
      policy: { maxAttempts: 1 },
    })
    openai.fake.enqueue(
      reply.error(401, {
        error: {
          message: 'Incorrect API key provided: sk-live-abcdefghijklmnopqrstuvwxyz123456.',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      }),
    )
    await expect(
      harness.client.chat.completions.create({
        model: 'chat',
        messages: [{ role: 'user', content: 'hi' }],
      }),
    ).rejects.toThrow()
    const text = JSON.stringify(harness.logs)
    expect(text).not.toContain('abcdefghijklmnopqrstuvwxyz123456')
    const line = harness.logs.find((l) => l.event === 'attempt')
    expect(String(line?.['providerMessage'])).toMatch(/^Incorrect API key provided/)
  })

  it('an attempt the provider did not answer, or answered with no message, has none: our own words are not its', async () => {
    // A headers timeout logged "no response headers in time (…)", a 500 with
    // an empty message "HTTP 500", as if the provider had said so.
    const hung = await fakeProvider('openai', ['k1'])
    const empty = await fakeProvider('openai', ['k2'])
    const answers = await fakeProvider('openai', ['k3'])
    fakes.push(hung.fake, empty.fake, answers.fake)
    harness = await startHarness({
      providers: {
        hung: { ...hung.entry, headersTimeoutMs: 200 },
        empty: empty.entry,
        ok: answers.entry,
      },
      models: { chat: fallback(['hung', 'm1'], ['empty', 'm2'], ['ok', 'm3']) },
      policy: { maxAttempts: 1 },
    })
    hung.fake.enqueue(reply.hang())
    empty.fake.enqueue(reply.error(500, { error: { message: '', type: 'server_error' } }))
    answers.fake.enqueue(reply.text('answered'))
    const completion = await harness.client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]?.message.content).toBe('answered')
    const lines = harness.logs.filter((l) => l.event === 'attempt')
    expect(lines.map((l) => [l['provider'], l['errorKind'], l['providerMessage']])).toEqual([
      ['hung', 'timeout', undefined],
      ['empty', 'server_error', undefined],
    ])
  })
})
