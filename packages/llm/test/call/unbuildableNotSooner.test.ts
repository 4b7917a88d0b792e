import { Deadline } from '@hourglass/core'
import { openAIErrors } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { Admission } from '../../src/admission/Admission.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

// The earliest-answer rule compared a rate-limited model's short wait with a
// fallback that cannot take the request (`extra.seed`: Anthropic has no
// equivalent). That fallback, with no latency history, was "expected to
// answer at once", so the call left the primary at its first 429
// (`retry-after-ms: 50`) and ended with InvalidChatRequestError as the
// fallback's request was built — nothing sent to it, the primary never
// asked again, the deadline of 10 s unused. A model that cannot build the
// request is no fallback: runModels ends the call there, so neither it nor a
// model after it in the list is expected to answer.

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 100, extra: { seed: 7 } }

async function setup(withOpenAIAfter = false) {
  const primary = await fakes.start()
  const refusing = await fakes.start({ dialect: 'anthropic' })
  const last = await fakes.start()
  const models = [
    fakes.adapter(openAICompatible({ baseURL: primary.baseURL, apiKey: 'sk', model: 'first' })),
    fakes.adapter(anthropic({ baseURL: refusing.baseURL, apiKey: 'sk', model: 'claude' })),
    ...(withOpenAIAfter
      ? [
          fakes.adapter(
            openAICompatible({ baseURL: last.baseURL, apiKey: 'sk', model: 'last', name: 'other' }),
          ),
        ]
      : []),
  ]
  return { primary, refusing, last, models }
}

describe('a fallback that cannot build the request is not expected to answer sooner', () => {
  it.each([
    ['with admission', () => new Admission()],
    ['without admission', () => false as const],
  ])('a short rate limit on the primary is waited out (%s)', async (_, admission) => {
    const { primary, refusing, models } = await setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 50 }))
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission: admission() },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([
      ['first', 'retry'],
      ['first', 'success'],
    ])
    expect(records[0]?.reason).not.toMatch(/falling back/)
    expect(primary.requests).toHaveLength(2)
    expect(refusing.requests).toHaveLength(0)
  })

  it('a model after one that cannot build the request is out of reach too', async () => {
    const { primary, refusing, last, models } = await setup(true)
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 50 }))
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(answer.model).toBe('first')
    expect(refusing.requests).toHaveLength(0)
    expect(last.requests).toHaveLength(0)
  })

  it('admission waits for a cooling primary instead of refusing it for such a fallback', async () => {
    const { primary, refusing, models } = await setup()
    const admission = new Admission()
    // Another call met the limit: the primary's key is cooling when this call
    // starts (for 500 ms: still cooling when read, on a loaded machine too).
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 500 }))
    await callModel({
      models: models.slice(0, 1),
      request,
      retry: { budgets: false, maxAttempts: 1 },
      limits: { admission },
    }).catch(() => {})
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models,
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission },
      onAttempt: (r) => records.push(r),
    })
    expect(answer.model).toBe('first')
    expect(records.map((r) => [r.model, r.decision])).toEqual([['first', 'success']])
    expect(refusing.requests).toHaveLength(0)
  })

  it('a fallback that can build it is still preferred to the wait', async () => {
    const { primary, models } = await setup()
    primary.enqueue(openAIErrors.rateLimited({ retryAfterMs: 5000 }))
    const other = await fakes.start()
    const answer = await callModel({
      models: [
        ...models.slice(0, 1),
        fakes.adapter(
          openAICompatible({ baseURL: other.baseURL, apiKey: 'sk', model: 'ok', name: 'other' }),
        ),
      ],
      request,
      deadline: Deadline.after(10_000),
      retry: { budgets: false },
      limits: { admission: false },
    })
    expect(answer.model).toBe('ok')
    expect(primary.requests).toHaveLength(1)
  })
})
