import diagnostics from 'node:diagnostics_channel'
import { getEventListeners } from 'node:events'
import { Deadline, errorCode, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { type ProviderReply, reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const onPublished = (message: unknown) => published.push(message as LlmAttemptMessage)
beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, onPublished))
afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, onPublished))
const fetches: HourglassFetch[] = []
afterEach(async () => {
  published.length = 0
  await Promise.all(fetches.splice(0).map((f) => f.close()))
})

/** The first token, then nothing more with the connection left open: tokens are paced on a clock of the fake's that never moves. */
const STALLS_AFTER_FIRST_TOKEN = reply.text('one two three four five', { tokenDelayMs: 1000 })

/**
 * A stream on a deadline on `clock`, with a first-token timer on it too (a
 * leak would show as a pending timer). The adapter's fetch has a 100 ms
 * body timeout, armed on the deadline's clock like every phase timer.
 */
async function streamOn(providerReply: ProviderReply) {
  const fake = await fakes.start({
    dialect: 'openai',
    clock: new ManualClock(),
    reply: providerReply,
  })
  const fetch = createFetch({ headersTimeoutMs: 10_000, bodyTimeoutMs: 100 })
  fetches.push(fetch)
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'p', fetch }),
  )
  const clock = new ManualClock()
  const deadline = Deadline.after(60_000, { clock })
  const controller = new AbortController()
  const records: AttemptRecord[] = []
  const timersBefore = clock.pendingTimers // the deadline's own
  const stream = callModel({
    models: [model],
    request: { messages: [user('count')], maxTokens: 16, stream: true },
    deadline,
    signal: controller.signal,
    firstTokenTimeoutMs: 5000,
    onAttempt: (r) => records.push(r),
  })
  return { fake, clock, deadline, controller, records, stream, timersBefore }
}

type Setup = Awaited<ReturnType<typeof streamOn>>

/** What must hold once the call is over, however it ended: nothing left upstream or behind, one attempt. */
async function expectReleased(setup: Setup, kind: string) {
  const { fake, clock, deadline, controller, records, timersBefore } = setup
  // The provider saw its client leave (the fake has no event for it: polled).
  await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
  await expect.poll(() => fake.inFlight).toBe(0)
  expect(fake.requests).toHaveLength(1)
  expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
  expect(clock.pendingTimers).toBe(deadline.done ? 0 : timersBefore)
  expect(records.map((r) => [r.attempt, r.errorKind, r.decision])).toEqual([[1, kind, 'fail']])
  expect(published.map((m) => [m.attempt, m.errorKind, m.decision])).toEqual([[1, kind, 'fail']])
  deadline.dispose()
}

describe('a stream ended mid-answer: the upstream request stops, nothing is left behind, one attempt is recorded', () => {
  it('the caller’s signal aborts after the first token: its reason, as it is', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    const reason = new Error('the caller left')
    let text = ''
    let thrown: unknown
    try {
      for await (const event of setup.stream) {
        if (event.type !== 'text') continue
        text += event.text
        setup.controller.abort(reason)
      }
    } catch (error) {
      thrown = error
    }
    expect(text).toBe('one')
    expect(thrown).toBe(reason)
    await expect(setup.stream.result).rejects.toBe(reason)
    await expectReleased(setup, 'aborted')
  })

  it('the loop breaks (the iterator’s return()): `result` rejects with an AbortError', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    for await (const event of setup.stream) if (event.type === 'text') break
    const error = await setup.stream.result.catch((e: unknown) => e)
    expect(errorCode(error)).toBe('AbortError')
    await expectReleased(setup, 'aborted')
  })

  it('the deadline ends it: StreamInterruptedError (STREAM_INTERRUPTED) with what arrived', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    let thrown: unknown
    try {
      for await (const event of setup.stream) if (event.type === 'text') setup.clock.advance(60_000)
    } catch (error) {
      thrown = error
    }
    expect(errorCode(thrown)).toBe('STREAM_INTERRUPTED')
    expect(thrown).toMatchObject({ partialText: 'one' })
    expect(isDeadlineExceeded((thrown as Error).cause)).toBe(true)
    await expect(setup.stream.result).rejects.toBe(thrown)
    await expectReleased(setup, 'deadline_exceeded')
  })

  it('the provider stops sending without closing: the body timeout ends it, STREAM_INTERRUPTED by a `timeout`', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    let thrown: unknown
    try {
      for await (const event of setup.stream) if (event.type === 'text') setup.clock.advance(100)
    } catch (error) {
      thrown = error
    }
    expect(isStreamInterrupted(thrown)).toBe(true)
    const cause = (thrown as Error).cause
    expect(isProviderError(cause) && [cause.kind, cause.status]).toEqual(['timeout', 200])
    await expectReleased(setup, 'timeout')
  })
})

it('the first-token timer and the deadline end together: the timed-out attempt is still recorded, once', async () => {
  // Sent, no answer: the first-token timer (5 s) and the deadline (60 s)
  // fall due in one step of the clock, so the deadline has ended by the time
  // the call reports the timeout to admission. (No headers: whether a 200's
  // headers had reached the client by that step would be a race.)
  const setup = await streamOn(reply.hang())
  await setup.fake.waitForRequests(1)
  setup.clock.advance(60_000)
  const error = await setup.stream.result.catch((e: unknown) => e)
  expect(isDeadlineExceeded(error)).toBe(true)
  expect(setup.records).toHaveLength(1)
  expect(setup.records[0]).toMatchObject({
    attempt: 1,
    status: 0,
    errorClass: 'FirstTokenTimeout',
    errorKind: 'timeout',
    decision: 'fail',
  })
  expect(setup.records[0]?.reason).toContain('deadline_exceeded')
  expect(published.map((m) => [m.errorKind, m.decision])).toEqual([['timeout', 'fail']])
  await expect.poll(() => setup.fake.inFlight).toBe(0)
  expect(setup.clock.pendingTimers).toBe(0)
})

describe('the iterator, as the async iterator protocol has it', () => {
  it('a read asked for before the last one settled: both settle, the earlier first, even when the call is cancelled', async () => {
    const setup = await streamOn(STALLS_AFTER_FIRST_TOKEN)
    const reads = setup.stream[Symbol.asyncIterator]()
    let firstSettled = false
    const first = reads.next().finally(() => {
      firstSettled = true
    })
    const second = reads.next()
    // The first token has reached the consumer: one of the two reads has it.
    await Promise.race([first, second])
    const reason = new Error('enough')
    setup.stream.cancel(reason)
    await expect(second).rejects.toBe(reason)
    expect(firstSettled).toBe(true)
    await expect(first).resolves.toEqual({ done: false, value: { type: 'text', text: 'one' } })
    await expectReleased(setup, 'aborted')
  })

  it('after return(), next() is done: nothing still queued is handed out', async () => {
    const setup = await streamOn(reply.text('one two three'))
    const answer = await setup.stream.result // every event is queued by now
    const reads = setup.stream[Symbol.asyncIterator]()
    await expect(reads.next()).resolves.toMatchObject({ done: false, value: { type: 'text' } })
    await expect(reads.return?.()).resolves.toEqual({ done: true, value: undefined })
    await expect(reads.next()).resolves.toEqual({ done: true, value: undefined })
    expect(answer.text).toBe('one two three')
    expect(setup.records.map((r) => r.decision)).toEqual(['success'])
    setup.deadline.dispose()
  })
})
