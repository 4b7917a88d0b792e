import { ClientClosedError, Deadline, ManualClock } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from './support/fakes.js'

// A route relaying a stream to a slow client waits for `drain` with the
// request's deadline signal (`await once(res, 'drain', { signal })`). When the
// deadline ends — it expires, or the client leaves — that wait rejects and the
// loop's `return()` stops the stream a tick before the aborted body reaches
// the attempt. That is the deadline's stop, not the caller's: the result is a
// StreamInterruptedError with the deadline's reason as cause (as when the loop
// is still reading), and the attempt says `deadline_exceeded` / `aborted`,
// without `stoppedBy: 'caller'`. Before, it read as the caller's choice to
// stop: `stoppedBy: 'caller'`, `aborted`, `result` a bare AbortError.

const fakes = useFakes()
const fetches: HourglassFetch[] = []
afterEach(async () => {
  await Promise.all(fetches.splice(0).map((f) => f.close()))
})

async function streamOn(options: { observe?: boolean } = {}) {
  const fake = await fakes.start({
    dialect: 'openai',
    clock: new ManualClock(),
    // the first token, then nothing more with the connection open (the fake's clock never moves)
    reply: reply.text('one two three four five', { tokenDelayMs: 1000 }),
  })
  const fetch = createFetch({ headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 })
  fetches.push(fetch)
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'p', fetch }),
  )
  const clock = new ManualClock()
  const deadline = Deadline.after(60_000, { clock, observe: options.observe ?? false })
  const records: AttemptRecord[] = []
  const stream = callModel({
    models: [model],
    request: { messages: [user('count')], maxTokens: 16, stream: true },
    deadline,
    retry: { maxAttempts: 1, budgets: false },
    limits: { admission: false },
    onAttempt: (r) => records.push(r),
  })
  return { clock, deadline, records, stream }
}

/** Reads to the first text event, ends the deadline with `end`, and leaves the loop at once. */
async function leaveWhenDeadlineEnds(setup: Awaited<ReturnType<typeof streamOn>>, end: () => void) {
  for await (const event of setup.stream) {
    if (event.type !== 'text') continue
    end()
    break // what a rejected `once(res, 'drain', { signal })` does to the loop
  }
  const error = await setup.stream.result.catch((e: unknown) => e)
  setup.deadline.dispose()
  return error
}

describe('a consumer that leaves its loop because the deadline ended', () => {
  it('the deadline expired: a StreamInterruptedError caused by it, kind deadline_exceeded, no caller stop', async () => {
    const setup = await streamOn()
    const error = await leaveWhenDeadlineEnds(setup, () => setup.clock.advance(60_000))
    expect(error).toMatchObject({ code: 'STREAM_INTERRUPTED', partialText: 'one' })
    expect((error as Error).cause).toMatchObject({ code: 'DEADLINE_EXCEEDED' })
    expect(setup.records.map((r) => [r.decision, r.errorKind, r.stoppedBy])).toEqual([
      ['fail', 'deadline_exceeded', undefined],
    ])
  })

  it('the deadline was cancelled (the client left): caused by its reason, no caller stop', async () => {
    const setup = await streamOn()
    const reason = new ClientClosedError()
    const error = await leaveWhenDeadlineEnds(setup, () => setup.deadline.cancel(reason))
    expect(error).toMatchObject({ code: 'STREAM_INTERRUPTED' })
    expect((error as Error).cause).toBe(reason)
    expect(setup.records.map((r) => [r.decision, r.errorKind, r.stoppedBy])).toEqual([
      ['fail', 'aborted', undefined],
    ])
  })

  it('under an observe-only deadline whose time passed (it stopped nothing) a break is the caller’s', async () => {
    const setup = await streamOn({ observe: true })
    const error = await leaveWhenDeadlineEnds(setup, () => setup.clock.advance(60_000))
    expect(setup.deadline.expired).toBe(true)
    expect(error).toMatchObject({ name: 'AbortError' })
    expect(setup.records.map((r) => r.stoppedBy)).toEqual(['caller'])
  })

  it('under a live deadline a break is still the caller’s', async () => {
    const setup = await streamOn()
    const error = await leaveWhenDeadlineEnds(setup, () => {})
    expect(error).toMatchObject({ name: 'AbortError' })
    expect(setup.records.map((r) => r.stoppedBy)).toEqual(['caller'])
  })
})
