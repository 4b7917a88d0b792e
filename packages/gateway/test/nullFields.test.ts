import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { KNOWN_FIELDS } from '../src/http/chatRequestSchema.js'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * The README promises that `null` means "not set" for every optional field,
 * as in OpenAI's API: clients that spell out every field of the request
 * type (nullable `top_logprobs`, `audio`…) must not get a 400 for a field
 * they did not use. Walks every field the schema knows, so a field added
 * later is held to the same rule.
 */
describe('a field sent as null is not set', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    harness = undefined
    fake = undefined
  })

  it('is accepted and not forwarded, for every optional field the schema knows', async () => {
    const started = await fakeProvider('openai', ['sk-key-0001'])
    fake = started.fake
    fake.setReply(reply.text('ok'))
    harness = await startHarness({
      providers: { o: started.entry },
      models: { m: fallback(['o', 'gpt-4o-mini']) },
    })
    const optional = [...KNOWN_FIELDS].filter((f) => f !== 'model' && f !== 'messages')
    for (const field of optional) {
      const res = await fetch(`${harness.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          messages: [{ role: 'user', content: 'hi' }],
          [field]: null,
        }),
      })
      expect(res.status, `${field}: ${await res.text()}`).toBe(200)
      const sent = fake.requests.at(-1)?.body as Record<string, unknown>
      // The gateway sets its own max_completion_tokens; everything else stays unset.
      if (field !== 'max_completion_tokens') expect(Object.hasOwn(sent, field), field).toBe(false)
    }
  })
})
