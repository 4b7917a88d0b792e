import { Deadline, ManualClock } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { Admission } from '../../src/admission/Admission.js'
import { ProviderLimits } from '../../src/admission/ProviderLimits.js'
import { callModel } from '../../src/call/callModel.js'
import { isInvalidChatRequest } from '../../src/errors/InvalidChatRequestError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
// Anthropic has no equivalent of OpenAI's message `name`: its adapter refuses it.
const untranslatable = { messages: [{ ...user('Hi'), name: 'bob' }], maxTokens: 32 }
const fine = { messages: [user('Hi')], maxTokens: 32 }

describe('admission after the request is built: nothing sent, nothing spent', () => {
  it.each([
    ['rpm', { rpm: 1 }],
    ['tpm', { tpm: 100 }],
  ] as const)(
    'a request the adapter cannot translate takes no %s share: the next good request still goes',
    async (_, limit) => {
      const clock = new ManualClock(1_000)
      const limits = new ProviderLimits({ limits: { anthropic: limit } })
      const admission = new Admission({ clock, limits, logger: { warn: () => {} } })
      const fake = await fakes.start({ dialect: 'anthropic' })
      const claude = fakes.adapter(
        anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
      )
      using deadline = Deadline.after(5_000, { clock })
      for (const stream of [false, true]) {
        const refused = await (stream
          ? callModel({
              models: [claude],
              request: { ...untranslatable, stream: true },
              deadline,
              limits: { admission },
            }).result
          : callModel({
              models: [claude],
              request: untranslatable,
              deadline,
              limits: { admission },
            })
        ).catch((e: unknown) => e)
        expect(isInvalidChatRequest(refused)).toBe(true)
      }
      // The window's one request (or its 100 tokens) is still there for this one.
      const answer = await callModel({
        models: [claude],
        request: fine,
        deadline,
        limits: { admission },
      })
      expect(answer.text).toBe('Hello from the fake provider.')
      expect(fake.requests).toHaveLength(1)
    },
  )
})
