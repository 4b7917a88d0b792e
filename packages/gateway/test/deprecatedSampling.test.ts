import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Claude Opus 4.7 and later (and the Claude 5 models) answer 400
 * "`temperature` is deprecated for this model." to the `temperature: 0.7`
 * an OpenAI client sends, Sonnet 4.5 and Opus 4.1 to 4.6 a `temperature`
 * beside a `top_p`, and Claude 4.6 and later refuse a prefill: the gateway
 * sent them, and the client got the provider's 400, which never falls back. Refused before sending, naming the field, the provider and
 * the model; as a value only those models refuse, only when such a model is
 * asked first — behind an OpenAI primary that takes it, the request is
 * answered, and reached as a fallback, it is refused there.
 */
let harness: Harness
const fakes: FakeProvider[] = []
let openai: FakeProvider
let anthropic: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const a = await fakeProvider('anthropic', ['sk-a'])
  openai = o.fake
  anthropic = a.fake
  fakes.push(o.fake, a.fake)
  harness = await startHarness({
    providers: { oa: o.entry, an: a.entry },
    models: {
      opus: fallback(['an', 'claude-opus-4-7']),
      sonnet: fallback(['an', 'claude-sonnet-4-5']),
      'gpt-then-opus': fallback(['oa', 'gpt-4.1-mini'], ['an', 'claude-opus-4-7']),
      'gpt-then-opus-4-6': fallback(['oa', 'gpt-4.1-mini'], ['an', 'claude-opus-4-6']),
    },
  })
})
afterAll(async () => {
  await harness?.close()
  await Promise.all(fakes.map((f) => f.close()))
})

const hi = [{ role: 'user' as const, content: 'hi' }]

it('claude-opus-4-7 asked first: a temperature of 0.7 is a 400 naming the field, provider and model, nothing sent', async () => {
  const refused = await harness.client.chat.completions
    .create({ model: 'opus', messages: hi, max_tokens: 20, temperature: 0.7 })
    .catch((error: unknown) => error)
  expect(refused).toMatchObject({ status: 400, param: 'temperature' })
  const message = (refused as Error).message
  expect(message).toContain('provider "an"')
  expect(message).toContain('"claude-opus-4-7"')
  expect(message).toContain('got 0.7')
  expect(anthropic.requests).toHaveLength(0)
})

it('claude-opus-4-7 asked first: a temperature of 1, what it does anyway, is answered without one', async () => {
  anthropic.enqueue(reply.text('hello'))
  const answer = await harness.client.chat.completions.create({
    model: 'opus',
    messages: hi,
    max_tokens: 20,
    temperature: 1,
    top_p: 1,
  })
  expect(answer.choices[0]?.message.content).toBe('hello')
  expect(anthropic.requests.at(-1)?.body).not.toHaveProperty('temperature')
  expect(anthropic.requests.at(-1)?.body).not.toHaveProperty('top_p')
})

it('claude-sonnet-4-5, which takes temperature or top_p: both changing sampling is a 400 naming top_p, nothing sent', async () => {
  const before = anthropic.requests.length
  const refused = await harness.client.chat.completions
    .create({ model: 'sonnet', messages: hi, max_tokens: 20, temperature: 0.7, top_p: 0.9 })
    .catch((error: unknown) => error)
  expect(refused).toMatchObject({ status: 400, param: 'top_p' })
  expect((refused as Error).message).toContain('"claude-sonnet-4-5"')
  expect(anthropic.requests.length).toBe(before)
})

it('behind an OpenAI primary, the primary answers 200', async () => {
  openai.enqueue(reply.text('from gpt'))
  const answer = await harness.client.chat.completions.create({
    model: 'gpt-then-opus',
    messages: hi,
    max_tokens: 20,
    temperature: 0.7,
  })
  expect(answer.choices[0]?.message.content).toBe('from gpt')
  expect(openai.requests.at(-1)?.body).toMatchObject({ temperature: 0.7 })
})

it('behind an OpenAI primary, a prefill with reasoning_effort (refused by Claude 4.6 thinking or not) is answered 200', async () => {
  openai.enqueue(reply.text('"title"}'))
  const answer = await harness.client.chat.completions.create({
    model: 'gpt-then-opus-4-6',
    messages: [
      { role: 'user', content: 'JSON please' },
      { role: 'assistant', content: '{' },
    ],
    max_tokens: 4000,
    reasoning_effort: 'low',
  })
  expect(answer.choices[0]?.message.content).toBe('"title"}')
})

it('reached as a fallback, claude-opus-4-7 refuses the temperature there, nothing sent to it', async () => {
  // The primary's key refused: it falls back at once.
  openai.enqueue(reply.error(401, { error: { message: 'bad key', code: 'invalid_api_key' } }))
  const before = anthropic.requests.length
  const refused = await harness.client.chat.completions
    .create({ model: 'gpt-then-opus', messages: hi, max_tokens: 20, temperature: 0.7 })
    .catch((error: unknown) => error)
  expect(refused).toMatchObject({ status: 400, param: 'temperature' })
  expect((refused as Error).message).toContain('"claude-opus-4-7"')
  expect(anthropic.requests.length).toBe(before)
})
