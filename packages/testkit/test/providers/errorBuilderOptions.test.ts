import { describe, expect, it } from 'vitest'
import { anthropicErrors } from '../../src/providers/errors/anthropicErrors.js'
import { geminiErrors } from '../../src/providers/errors/geminiErrors.js'
import { openAIErrors } from '../../src/providers/errors/openAIErrors.js'
import { qwenErrors } from '../../src/providers/errors/qwenErrors.js'

// A scripted error's options were read by name and nothing else:
// `openAIErrors.rateLimited({ retryAfterMS: 200 })` scripted the default 1 s
// wait, and the test asserting a 200 ms retry tested something else. Refused
// as reply.text()'s are: a TypeError naming the key, the one meant, the builder.
const cases: Array<{
  taker: string
  build: (extra: object) => unknown
  key: string
  meant: string
}> = [
  {
    taker: 'openAIErrors.rateLimited()',
    build: (o) => openAIErrors.rateLimited(o),
    key: 'retryAfterMS',
    meant: 'retryAfterMs',
  },
  {
    taker: 'openAIErrors.serverError()',
    build: (o) => openAIErrors.serverError(o),
    key: 'statuss',
    meant: 'status',
  },
  {
    taker: 'anthropicErrors.overloaded()',
    build: (o) => anthropicErrors.overloaded(o),
    key: 'shouldRetri',
    meant: 'shouldRetry',
  },
  {
    taker: 'anthropicErrors.rateLimited()',
    build: (o) => anthropicErrors.rateLimited(o),
    key: 'retryAfterSec',
    meant: 'retryAfterS',
  },
  {
    taker: 'anthropicErrors.monthlySpendLimit()',
    build: (o) => anthropicErrors.monthlySpendLimit(o),
    key: 'retryAfterMs',
    meant: 'retryAfterS',
  },
  {
    taker: 'anthropicErrors.overloadedInStream()',
    build: (o) => anthropicErrors.overloadedInStream(o),
    key: 'afterToken',
    meant: 'afterTokens',
  },
  {
    taker: 'geminiErrors.resourceExhausted()',
    build: (o) => geminiErrors.resourceExhausted(o),
    key: 'retryDelayS',
    meant: 'retryDelay',
  },
  {
    taker: 'geminiErrors.contextTooLong()',
    build: (o) => geminiErrors.contextTooLong(o),
    key: 'token',
    meant: 'tokens',
  },
  {
    taker: 'anthropicErrors.outputBlockedInStream()',
    build: (o) => anthropicErrors.outputBlockedInStream(o),
    key: 'afterToken',
    meant: 'afterTokens',
  },
  {
    taker: 'geminiErrors.payloadTooLarge()',
    build: (o) => geminiErrors.payloadTooLarge(o),
    key: 'limitByte',
    meant: 'limitBytes',
  },
  {
    taker: 'geminiErrors.promptBlocked()',
    build: (o) => geminiErrors.promptBlocked(o),
    key: 'blockreason',
    meant: 'blockReason',
  },
  {
    taker: 'geminiErrors.malformedFunctionCall()',
    build: (o) => geminiErrors.malformedFunctionCall(o),
    key: 'finishMesage',
    meant: 'finishMessage',
  },
  {
    taker: 'qwenErrors.throttlingInStream()',
    build: (o) => qwenErrors.throttlingInStream(o),
    key: 'codes',
    meant: 'code',
  },
]

describe('a scripted error refuses an option it does not read', () => {
  for (const { taker, build, key, meant } of cases) {
    it(`${taker} refuses ${key}`, () => {
      expect(() => build({})).not.toThrow()
      expect(() => build({ [key]: 1 })).toThrow(TypeError)
      expect(() => build({ [key]: 1 })).toThrow(
        `unknown option "${key}" (did you mean ${meant}?); ${taker} takes `,
      )
    })
  }
})

it('geminiErrors.payloadTooLarge({ limitBytes }) names that limit in Gemini’s words', () => {
  const reply = geminiErrors.payloadTooLarge({ limitBytes: 4_194_304 })
  expect(reply.status).toBe(400)
  expect(JSON.stringify(reply.body)).toContain(
    'Request payload size exceeds the limit: 4194304 bytes.',
  )
})
