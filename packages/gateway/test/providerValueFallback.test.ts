import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * A value only one provider refuses — an email address as the end-user id
 * (Anthropic), a tool named as MCP servers name them (`1password_read`,
 * Gemini) — is refused up front only when that provider is asked first.
 * Checked for the whole fallback list, every such request failed 400 once
 * an Anthropic or Gemini entry was added behind an OpenAI primary that
 * takes it. Reached as a fallback, the provider refuses it then, naming the
 * client's field, nothing sent to it.
 */
let harness: Harness
const fakes: FakeProvider[] = []
let primary: FakeProvider
let anthropic: FakeProvider
beforeAll(async () => {
  const o = await fakeProvider('openai', ['sk-o'])
  const a = await fakeProvider('anthropic', ['sk-a'])
  const g = await fakeProvider('gemini', ['sk-g'])
  primary = o.fake
  anthropic = a.fake
  fakes.push(o.fake, a.fake, g.fake)
  harness = await startHarness({
    providers: { oa: o.entry, an: a.entry, ge: g.entry },
    models: {
      'chat-a': fallback(['oa', 'gpt-4o-mini'], ['an', 'claude-sonnet-4-5']),
      'chat-g': fallback(['oa', 'gpt-4o-mini'], ['ge', 'gemini-2.5-flash']),
      'claude-first': fallback(['an', 'claude-sonnet-4-5'], ['oa', 'gpt-4o-mini']),
    },
  })
})
afterAll(async () => {
  await harness?.close()
  await Promise.all(fakes.map((f) => f.close()))
})

async function post(body: Record<string, unknown>) {
  const res = await fetch(`${harness.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ...body }),
  })
  return { status: res.status, body: (await res.json()) as { error?: { param?: string } } }
}

const MCP_TOOL = {
  type: 'function',
  function: { name: '1password_read', parameters: { type: 'object', properties: {} } },
}

it('behind an OpenAI primary that takes it, the request is answered', async () => {
  expect((await post({ model: 'chat-a', user: 'alice@example.com' })).status).toBe(200)
  expect((await post({ model: 'chat-g', tools: [MCP_TOOL] })).status).toBe(200)
})

it("it hides none of the request's own refusals for the whole list (a seed too wide for Gemini, a max_tokens under Anthropic's thinking budget)", async () => {
  const before = primary.requests.length
  const seed = await post({ model: 'chat-g', seed: 2 ** 40, tools: [MCP_TOOL] })
  expect(seed.status).toBe(400)
  expect(seed.body.error?.param).toBe('seed')
  const thinking = await post({
    model: 'chat-a',
    reasoning_effort: 'high',
    user: 'alice@example.com',
  })
  expect(thinking.status).toBe(400)
  expect(thinking.body.error?.param).toBe('max_tokens')
  expect(primary.requests.length).toBe(before)
})

it('asked first, the provider refuses it up front, naming the field', async () => {
  const before = anthropic.requests.length
  const refused = await post({ model: 'claude-first', user: 'alice@example.com' })
  expect(refused.status).toBe(400)
  expect(refused.body.error?.param).toBe('user')
  expect(anthropic.requests.length).toBe(before)
})

it('reached as a fallback, it is refused there, naming the field, nothing sent to it', async () => {
  // The primary's key refused (it falls back at once; this file's last test).
  primary.enqueue(reply.error(401, { error: { message: 'bad key', code: 'invalid_api_key' } }))
  const before = anthropic.requests.length
  const answer = await post({ model: 'chat-a', user: 'alice@example.com' })
  expect(answer.status).toBe(400)
  expect(answer.body.error?.param).toBe('user')
  expect(anthropic.requests.length).toBe(before)
})
