import diagnostics from 'node:diagnostics_channel'
import { type ProviderDialect, reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const onPublished = (message: unknown) => published.push(message as LlmAttemptMessage)
beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, onPublished))
afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, onPublished))
afterEach(() => {
  published.length = 0
})

/** The alias asked for, and the snapshot the provider says answered (its chunks', `message_start`'s, `modelVersion`). */
const ASKED = 'alias-latest'
const ANSWERED = 'alias-2026-01-01'

async function answer(dialect: ProviderDialect, stream: boolean): Promise<ChatResponse> {
  const fake = await fakes.start({ dialect, reply: reply.text('Hello there', { model: ANSWERED }) })
  const model = fakes.adapterFor(dialect, fake.baseURL, ASKED)
  const options = {
    models: [model],
    request: { messages: [user('hi')], maxTokens: 16, stream },
    limits: { admission: false as const },
  }
  if (!stream) return callModel(options)
  const streamed = callModel({ ...options, request: { ...options.request, stream: true } })
  for await (const _ of streamed) {
    // read to the end
  }
  return streamed.result
}

describe('a streamed answer names the model the provider says answered, as the same answer whole does', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: answer.model and the attempt's responseModel are the provider's, streamed or not`, async () => {
      const whole = await answer(dialect, false)
      expect(whole.model).toBe(ANSWERED)
      const streamed = await answer(dialect, true)
      // Before: the alias asked for, whatever the stream said.
      expect(streamed.model).toBe(ANSWERED)
      expect(published.map((m) => [m.model, m.responseModel])).toEqual([
        [ASKED, ANSWERED],
        [ASKED, ANSWERED],
      ])
    })
  }
})
