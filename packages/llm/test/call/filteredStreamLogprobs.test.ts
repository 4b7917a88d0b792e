import { qwenErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { useFakes, user } from './support/fakes.js'

/**
 * A stream's log probabilities come with its finish event. One an output
 * filter stopped after its first tokens (DashScope's `data_inspection_failed`)
 * never sends that finish: its `StreamInterruptedError` carries the log
 * probabilities of the text that came (`partialLogprobs`), as it carries that
 * text, so what is shown can still be scored (and the gateway sends them on
 * its `content_filter` finish chunk).
 */
describe('StreamInterruptedError.partialLogprobs', () => {
  const fakes = useFakes()

  for (const asked of [true, false]) {
    it(`a stream the output filter stopped after two tokens, logprobs ${asked ? '' : 'not '}asked for`, async () => {
      const refused = qwenErrors.compatibleDataInspectionFailed().body
      const fake = await fakes.start({
        dialect: 'qwen',
        reply: reply.text('one two three', {
          streamError: { afterTokens: 2, body: refused, status: 400 },
        }),
      })
      const model = fakes.adapter(
        openAICompatible({
          baseURL: fake.baseURL,
          apiKey: 'sk',
          model: 'qwen-plus',
          dialect: 'qwen',
        }),
      )
      const error = await callModel({
        models: [model],
        request: {
          messages: [user('hi')],
          maxTokens: 16,
          stream: true,
          ...(asked ? { extra: { logprobs: true } } : {}),
        },
        limits: { admission: false },
      }).result.catch((e: unknown) => e)
      expect(isStreamInterrupted(error)).toBe(true)
      if (!isStreamInterrupted(error)) return
      expect(error.partialText).toBe('one two')
      if (asked) {
        expect(error.partialLogprobs?.content?.map((t) => (t as { token: string }).token)).toEqual([
          'one',
          ' two',
        ])
      } else {
        expect(error.partialLogprobs).toBeUndefined()
      }
    })
  }
})
