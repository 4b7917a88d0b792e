import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Values only some models refuse, each a provider's 400 that never falls
 * back, which the gateway sent: OpenAI's reasoning models (`gpt-5-mini`, the
 * o-series) answer "Only the default (1) value is supported" to the
 * `temperature: 0.7` an OpenAI client sends; Gemini 2.5 Pro answers
 * `reasoning_effort: "none"` ("Budget 0 is invalid. This model only works
 * in thinking mode."); Claude Opus 4.7 and later (and the Claude 5 models)
 * answer "`temperature` is deprecated for this model.", Sonnet 4.5 and Opus
 * 4.1 to 4.6 a `temperature` beside a `top_p`, and Claude 4.6 and later
 * refuse a prefill. Refused before sending, naming the field, the provider
 * and the model; as values only those models refuse, only when such a model
 * is asked first — behind a primary that takes the value the request is
 * answered, and reached as a fallback, it is refused there.
 *
 * One gateway for all (in this order: the last test retires the OpenAI key).
 */
let harness: Harness
const fakes: FakeProvider[] = []
let openai: FakeProvider
let anthropic: FakeProvider
let gemini: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const a = await fakeProvider('anthropic', ['sk-a'])
  const g = await fakeProvider('gemini', ['sk-g'])
  openai = o.fake
  anthropic = a.fake
  gemini = g.fake
  fakes.push(o.fake, a.fake, g.fake)
  harness = await startHarness({
    providers: { oa: o.entry, an: a.entry, ge: g.entry },
    models: {
      mini: fallback(['oa', 'gpt-5-mini']),
      pro: fallback(['ge', 'gemini-2.5-pro']),
      'flash-then-pro': fallback(['ge', 'gemini-2.5-flash'], ['ge', 'gemini-2.5-pro']),
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

it('gpt-5-mini asked first: a temperature of 0.7 is a 400 naming the field and model, nothing sent', async () => {
  const refused = await harness.client.chat.completions
    .create({ model: 'mini', messages: hi, max_tokens: 20, temperature: 0.7 })
    .catch((error: unknown) => error)
  expect(refused).toMatchObject({ status: 400, param: 'temperature' })
  expect((refused as Error).message).toContain('gpt-5-mini')
  expect(openai.requests).toHaveLength(0)
})

it('gpt-5-mini: a temperature of 1, its default, is answered without one', async () => {
  openai.enqueue(reply.text('hello'))
  const answer = await harness.client.chat.completions.create({
    model: 'mini',
    messages: hi,
    max_tokens: 20,
    temperature: 1,
  })
  expect(answer.choices[0]?.message.content).toBe('hello')
  expect(openai.requests.at(-1)?.body).not.toHaveProperty('temperature')
})

it('gemini-2.5-pro asked first: reasoning_effort none is a 400 naming the field, nothing sent', async () => {
  const refused = await harness.client.chat.completions
    .create({ model: 'pro', messages: hi, max_tokens: 20, reasoning_effort: 'none' })
    .catch((error: unknown) => error)
  expect(refused).toMatchObject({ status: 400, param: 'reasoning_effort' })
  expect((refused as Error).message).toContain('gemini-2.5-pro')
  expect(gemini.requests).toHaveLength(0)
})

it('behind gemini-2.5-flash, which turns its thinking off, the primary answers 200', async () => {
  gemini.enqueue(reply.text('quick'))
  const answer = await harness.client.chat.completions.create({
    model: 'flash-then-pro',
    messages: hi,
    max_tokens: 20,
    reasoning_effort: 'none',
  })
  expect(answer.choices[0]?.message.content).toBe('quick')
})

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
