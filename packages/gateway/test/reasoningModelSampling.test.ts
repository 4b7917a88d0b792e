import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * OpenAI's reasoning models (`gpt-5-mini`, the o-series) answer 400 "Only
 * the default (1) value is supported" to the `temperature: 0.7` an OpenAI
 * client sends; Gemini 2.5 Pro answers `reasoning_effort: "none"` 400
 * ("Budget 0 is invalid. This model only works in thinking mode."). The
 * gateway sent them, and the client got the provider's 400, which never
 * falls back. Refused before sending, naming the field and the model; as
 * values only those models refuse, only when such a model is asked first.
 */
let harness: Harness
const fakes: FakeProvider[] = []
let openai: FakeProvider
let gemini: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const g = await fakeProvider('gemini', ['sk-g'])
  openai = o.fake
  gemini = g.fake
  fakes.push(o.fake, g.fake)
  harness = await startHarness({
    providers: { oa: o.entry, ge: g.entry },
    models: {
      mini: fallback(['oa', 'gpt-5-mini']),
      pro: fallback(['ge', 'gemini-2.5-pro']),
      'flash-then-pro': fallback(['ge', 'gemini-2.5-flash'], ['ge', 'gemini-2.5-pro']),
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
