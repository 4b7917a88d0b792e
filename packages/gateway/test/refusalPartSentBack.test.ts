import type { FakeProvider, ProviderDialect } from '@hourglass/testkit'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

const DIALECTS: ProviderDialect[] = ['openai', 'deepseek', 'anthropic', 'gemini']

/**
 * OpenAI's assistant message takes its content as parts of two kinds: `text`
 * and `refusal` (`ChatCompletionContentPartRefusal`, `{ type: "refusal",
 * refusal }`). A refusal part is the same turn as the `refusal` field the
 * gateway already takes: the provider must get the same request either way.
 */
describe('an assistant message whose content holds a refusal part', () => {
  let fakes: FakeProvider[] = []
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await Promise.all(fakes.map((f) => f.close()))
    fakes = []
    harness = undefined
  })

  it('is sent on as the same refused turn as the `refusal` field, whatever the dialect', async () => {
    const providers: Record<string, unknown> = {}
    const models: Record<string, unknown> = {}
    const byDialect = new Map<ProviderDialect, FakeProvider>()
    for (const dialect of DIALECTS) {
      const { fake, entry } = await fakeProvider(dialect, [`key-${dialect}`])
      fakes.push(fake)
      byDialect.set(dialect, fake)
      providers[dialect] = entry
      models[`m-${dialect}`] = fallback([dialect, `${dialect}-model`])
    }
    harness = await startHarness({ providers, models })
    const post = (model: string, assistant: Record<string, unknown>) =>
      fetch(`${harness!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', ...assistant },
            { role: 'user', content: 'please?' },
          ],
        }),
      })
    for (const [dialect, fake] of byDialect) {
      fake.enqueue(reply.text('ok'), reply.text('ok'), reply.text('ok'), reply.text('ok'))
      const asField = await post(`m-${dialect}`, { content: null, refusal: 'I cannot help.' })
      expect(asField.status, dialect).toBe(200)
      const fieldBody = fake.requests.at(-1)?.body
      const asPart = await post(`m-${dialect}`, {
        content: [{ type: 'refusal', refusal: 'I cannot help.' }],
      })
      expect(asPart.status, `${dialect}: ${await asPart.clone().text()}`).toBe(200)
      expect(fake.requests.at(-1)?.body, dialect).toEqual(fieldBody)
      // Text before the refusal keeps its place, as with `content` beside `refusal`.
      await post(`m-${dialect}`, { content: 'Let me see.', refusal: 'I cannot help.' })
      const bothBody = fake.requests.at(-1)?.body
      const mixed = await post(`m-${dialect}`, {
        content: [
          { type: 'text', text: 'Let me see.' },
          { type: 'refusal', refusal: 'I cannot help.' },
        ],
      })
      expect(mixed.status, dialect).toBe(200)
      expect(fake.requests.at(-1)?.body, dialect).toEqual(bothBody)
      // Review: the same refusal as a part and as the field (a history built
      // by hand) was sent twice, glued: "I cannot help.I cannot help."
      fake.enqueue(reply.text('ok'))
      const twice = await post(`m-${dialect}`, {
        content: [{ type: 'refusal', refusal: 'I cannot help.' }],
        refusal: 'I cannot help.',
      })
      expect(twice.status, dialect).toBe(200)
      expect(fake.requests.at(-1)?.body, dialect).toEqual(fieldBody)
    }
  })

  it('is an assistant part only: in a user message it is a 400 naming it, nothing sent', async () => {
    const { fake, entry } = await fakeProvider('openai', ['key'])
    fakes.push(fake)
    harness = await startHarness({ providers: { p: entry }, models: { m: fallback(['p', 'x']) } })
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: [{ type: 'refusal', refusal: 'no' }] }],
      }),
    })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: { param: string } }
    expect(body.error.param).toBe('messages[0].content[0].type')
    expect(fake.requests).toHaveLength(0)
  })
})
