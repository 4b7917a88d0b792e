import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()

// Every call walks `extra` for a NaN or ±Infinity before sending. The walk
// made a step object and a path string for every value: a gateway request
// of 3.8 MB (under its 4 MiB limit) holding 1.9 M zeros in an unknown field
// took 1.5–1.7 s instead of 0.3–0.7 s, and 1 M zeros with a NaN last were
// refused after 3.2 s here (writing them as JSON takes ~20 ms). Paths are
// now built for the number found only: ~10–40 ms, well under the bound.
describe('the check of `extra` for numbers JSON cannot hold', () => {
  it('costs about what writing the value does: a million numbers are refused in well under 2 s', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const content: number[] = []
    for (let i = 0; i < 1_000_000; i++) content.push(0)
    content.push(Number.NaN)
    const started = performance.now()
    const refused = await callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, extra: { prediction: { content } } },
      limits: { admission: false },
    }).then(
      () => undefined,
      (error: unknown) => error,
    )
    const tookMs = performance.now() - started
    expect(isInvalidChatRequest(refused)).toBe(true)
    expect((refused as { field: string }).field).toBe('prediction.content[1000000]')
    expect(fake.requests).toHaveLength(0)
    expect(tookMs).toBeLessThan(2000)
  })
})
