import { openAIErrors } from '@hourglass/testkit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * Every configured header value is a secret to the gateway, whatever the
 * header's name ("treated as secrets: scrubbed like keys"). A value written
 * with an auth scheme (`x-upstream: Bearer <token>`, a proxy's token in
 * front of the provider) was scrubbed only whole: a provider echoing the
 * token alone — "token <token> is not allowed" — put it in the client's
 * error body and the attempt's log line, as @hourglass/llm searches for the
 * part after a scheme only under a header whose name says credential.
 */
describe('the token after an auth scheme in a provider header is scrubbed', () => {
  const TOKEN = 'tok-0123456789abcdefXYZ'
  let harness: Harness
  let fake: Awaited<ReturnType<typeof fakeProvider>>['fake']
  beforeAll(async () => {
    const p = await fakeProvider('openai', [], { headers: { 'x-upstream': `Bearer ${TOKEN}` } })
    fake = p.fake
    harness = await startHarness({
      providers: { up: p.entry },
      models: { m: fallback(['up', 'gpt-4o-mini']) },
    })
  })
  afterAll(async () => {
    await harness.close()
    await fake.close()
  })

  it('neither the client nor the log sees the token a provider echoes', async () => {
    fake.enqueue(openAIErrors.badRequest(`upstream token ${TOKEN} is not allowed for this model`))
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(res.status).toBe(400)
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toBe('up: upstream token [redacted] is not allowed for this model')
    // The header was sent as configured.
    expect(fake.requests[0]?.headers['x-upstream']).toBe(`Bearer ${TOKEN}`)
    expect(JSON.stringify(harness.logs)).not.toContain(TOKEN)
    const attempt = harness.logs.find((l) => l['event'] === 'attempt')
    expect(attempt?.['providerMessage']).toBe(
      'upstream token [redacted] is not allowed for this model',
    )
  })

  it('a short word after a scheme-like first word is not scrubbed', async () => {
    // Only the whole value and a part of 8 characters or more are searched for.
    fake.enqueue(openAIErrors.badRequest('Bearer tokens expire: see the docs'))
    const res = await fetch(`${harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    })
    const { error } = (await res.json()) as { error: { message: string } }
    expect(error.message).toBe('up: Bearer tokens expire: see the docs')
  })
})
