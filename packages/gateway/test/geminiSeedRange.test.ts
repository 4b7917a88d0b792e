import type { FakeProvider, RecordedRequest } from '@hourglass/testkit'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * OpenAI takes any 64-bit `seed` (a hash, a timestamp); Gemini's
 * `generationConfig.seed` is an int32, and it answers a larger one 400
 * "Invalid value at 'generation_config.seed' (TYPE_INT32)" — as the fake does
 * here — a bad request that no fallback follows.
 */

const INT32_MAX = 2 ** 31 - 1

function geminiCheck(request: RecordedRequest) {
  const seed = (request.body as { generationConfig?: { seed?: number } }).generationConfig?.seed
  if (seed !== undefined && (seed > INT32_MAX || seed < -INT32_MAX - 1)) {
    return {
      kind: 'error' as const,
      status: 400,
      body: {
        error: {
          code: 400,
          status: 'INVALID_ARGUMENT',
          message: `Invalid value at 'generation_config.seed' (TYPE_INT32), ${seed}`,
        },
      },
    }
  }
  return { kind: 'text' as const, text: 'ok' }
}

const gateway = oneProviderGateway()
let fake: FakeProvider

beforeAll(async () => {
  fake = await gateway.one('gemini')
  fake.setReply(geminiCheck)
})

afterAll(() => gateway.close())

describe('a seed beyond 32 bits, for a model routed to Gemini', () => {
  it('is refused 400 unsupported_field naming seed and the provider, nothing sent', async () => {
    const before = fake.requests.length
    const error = await gateway.harness.client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'hi' }], seed: 3898845386 })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      )
    expect(error).toBeInstanceOf(OpenAI.BadRequestError)
    const refusal = error as InstanceType<typeof OpenAI.BadRequestError>
    expect(refusal.code).toBe('unsupported_field')
    expect(refusal.param).toBe('seed')
    expect(refusal.message).toContain('"p"')
    expect(fake.requests.length).toBe(before)
  })

  it('goes as it is within 32 bits', async () => {
    const answer = await gateway.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      seed: INT32_MAX,
    })
    expect(answer.choices[0]?.message.content).toBe('ok')
    const body = fake.requests.at(-1)?.body as { generationConfig: { seed: number } }
    expect(body.generationConfig.seed).toBe(INT32_MAX)
  })
})
