import { Deadline, ManualClock, readContext } from '@hourglass/core'
import { fetchChannels } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { MODEL_SEND } from '../../src/call/runModelSend.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 5 }
const serverError = () => reply.error(500, { error: { message: 'boom', type: 'server_error' } })

/**
 * What an attempt record (and `hourglass:llm:attempt`) says beyond the call's
 * count: the attempt's number on its model, and, when a failed attempt was
 * not retried, what stood in the way — a tracer counts that as a skipped
 * retry, as it does @hourglass/fetch's.
 */
describe('why a model was not tried again', () => {
  async function model(name = 'm', extra: Partial<Parameters<typeof openAICompatible>[0]> = {}) {
    const fake = await fakes.start({ dialect: 'openai' })
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: name, name, ...extra }),
    )
    return { fake, adapter }
  }

  it('no-budget: the retry wait does not fit in the time left, so it is not slept', async () => {
    const { fake, adapter } = await model()
    fake.enqueue(serverError())
    const records: AttemptRecord[] = []
    using deadline = Deadline.after(1000, { clock: new ManualClock() })
    await expect(
      callModel({
        models: [adapter],
        request,
        deadline,
        onAttempt: (r) => records.push(r),
        retry: { delay: { baseDelayMs: 5000, maxDelayMs: 5000, jitterRatio: 0 } },
        limits: { admission: false },
      }),
    ).rejects.toThrow()
    expect(records.map((r) => [r.decision, r.why, r.attempt, r.modelAttempt])).toEqual([
      ['fail', 'no-budget', 1, 1],
    ])
  })

  it('no-budget too when the deadline ends the attempt; aborted when the caller does', async () => {
    const { fake, adapter } = await model()
    fake.setReply(reply.hang())
    const records: AttemptRecord[] = []
    const clock = new ManualClock()
    using deadline = Deadline.after(1000, { clock })
    const timedOut = callModel({
      models: [adapter],
      request,
      deadline,
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    })
    await fake.waitForRequests(1)
    clock.advance(1000)
    await expect(timedOut).rejects.toThrow()
    const caller = new AbortController()
    const aborted = callModel({
      models: [adapter],
      request,
      signal: caller.signal,
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    })
    await fake.waitForRequests(2)
    caller.abort()
    await expect(aborted).rejects.toThrow()
    expect(records.map((r) => [r.decision, r.errorKind, r.why])).toEqual([
      ['fail', 'deadline_exceeded', 'no-budget'],
      ['fail', 'aborted', 'aborted'],
    ])
  })

  it("not-retryable, then the fallback's answer is attempt 2 of the call but 1 on its model", async () => {
    const first = await model('first')
    const backup = await model('backup')
    first.fake.enqueue(
      reply.error(404, { error: { message: 'no such model', type: 'invalid_request_error' } }),
    )
    const records: AttemptRecord[] = []
    await callModel({
      models: [first.adapter, backup.adapter],
      request,
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    })
    expect(records.map((r) => [r.model, r.decision, r.why, r.attempt, r.modelAttempt])).toEqual([
      ['first', 'fallback', 'not-retryable', 1, 1],
      ['backup', 'success', undefined, 2, 1],
    ])
  })

  it('max-attempts: the last allowed attempt failed; a retried attempt carries no why', async () => {
    const { fake, adapter } = await model()
    fake.enqueue(serverError(), serverError())
    const records: AttemptRecord[] = []
    await expect(
      callModel({
        models: [adapter],
        request,
        onAttempt: (r) => records.push(r),
        retry: { maxAttempts: 2, delay: { baseDelayMs: 0, maxDelayMs: 0, jitterRatio: 0 } },
        limits: { admission: false },
      }),
    ).rejects.toThrow()
    expect(records.map((r) => [r.decision, r.why, r.modelAttempt])).toEqual([
      ['retry', undefined, 1],
      ['fail', 'max-attempts', 2],
    ])
  })

  it('after-first-byte: a stream broken mid-way by an error frame says so and names the error, not "the call was ended"', async () => {
    const { fake, adapter } = await model()
    fake.enqueue(
      reply.text('one two three', {
        streamError: { afterTokens: 2, body: { error: { message: 'boom', type: 'server_error' } } },
      }),
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [adapter],
      request: { ...request, stream: true },
      onAttempt: (r) => records.push(r),
      limits: { admission: false },
    })
    await expect(stream.result).rejects.toThrow('broke after the first token')
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', why: 'after-first-byte' })
    expect(records[0]?.reason).toBe(
      'server_error (HTTP 200, server_error): the stream broke after the first token (7 characters received); not restarted',
    )
  })

  it("marks its HTTP attempts as a model attempt's (MODEL_SEND), for a tracer to count once", async () => {
    const { adapter } = await model()
    const seen: Array<true | undefined> = []
    const listener = () => seen.push(readContext(MODEL_SEND))
    fetchChannels.attempt.subscribe(listener)
    try {
      await callModel({ models: [adapter], request, limits: { admission: false } })
    } finally {
      fetchChannels.attempt.unsubscribe(listener)
    }
    expect(seen).toEqual([true])
    // Outside a model attempt: unset.
    expect(readContext(MODEL_SEND)).toBeUndefined()
  })
})
