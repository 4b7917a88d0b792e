import diagnostics from 'node:diagnostics_channel'
import { ClientClosedError, Deadline, ManualClock } from '@hourglass/core'
import { createFetch, type HourglassFetch } from '@hourglass/fetch'
import { reply } from '@hourglass/testkit'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { type LlmAttemptMessage, llmChannels } from '../../src/channels.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { useFakes, user } from './support/fakes.js'

// A consumer that stops reading the stream it was handed (`break`, the
// stream's `cancel`, its own signal aborted mid-stream) ended the attempt by
// choice: its record and `attempt` message say `stoppedBy: 'caller'`, as
// fetch's `attempt-end` does, so a dashboard can tell a "stop generating"
// from a failed model call. Every other field stays as it was (`aborted`).
// The deadline (its expiry, or a cancel: the client left) and a provider's
// failure are no caller's stop.

const fakes = useFakes()
const published: LlmAttemptMessage[] = []
const onPublished = (message: unknown) => published.push(message as LlmAttemptMessage)
beforeAll(() => diagnostics.subscribe(llmChannels.attempt.name, onPublished))
afterAll(() => diagnostics.unsubscribe(llmChannels.attempt.name, onPublished))
const fetches: HourglassFetch[] = []
const servers: Array<{ close(): void }> = []
afterEach(async () => {
  published.length = 0
  for (const server of servers.splice(0)) server.close()
  await Promise.all(fetches.splice(0).map((f) => f.close()))
})

/** The first token, then nothing more with the connection open (the fake's clock never moves). */
const STALLS_AFTER_FIRST_TOKEN = reply.text('one two three four five', { tokenDelayMs: 1000 })

async function streamOn(options: { signalOfDeadline?: boolean } = {}) {
  const fake = await fakes.start({
    dialect: 'openai',
    clock: new ManualClock(),
    reply: STALLS_AFTER_FIRST_TOKEN,
  })
  const fetch = createFetch({ headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000 })
  fetches.push(fetch)
  const model = fakes.adapter(
    openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'p', fetch }),
  )
  const clock = new ManualClock()
  const deadline = Deadline.after(60_000, { clock })
  const controller = new AbortController()
  const records: AttemptRecord[] = []
  const stream = callModel({
    models: [model],
    request: { messages: [user('count')], maxTokens: 16, stream: true },
    deadline,
    signal: options.signalOfDeadline === true ? deadline.signal : controller.signal,
    retry: { maxAttempts: 1, budgets: false },
    limits: { admission: false },
    onAttempt: (r) => records.push(r),
  })
  return { clock, deadline, controller, records, stream }
}

type Setup = Awaited<ReturnType<typeof streamOn>>

/** Reads up to the first text event, calls `stop`, then reads on; returns what the call ended with. */
async function stopAfterFirstToken(setup: Setup, stop: () => void): Promise<unknown> {
  try {
    for await (const event of setup.stream) if (event.type === 'text') stop()
  } catch {
    // the iterator throws what `result` rejects with
  }
  return setup.stream.result.catch((e: unknown) => e)
}

/** The one attempt's record and message, in the fields this test is about. */
function outcome(setup: Setup) {
  setup.deadline.dispose()
  const fields = (r: LlmAttemptMessage) => ({
    decision: r.decision,
    errorKind: r.errorKind,
    status: r.status,
    stoppedBy: r.stoppedBy,
  })
  expect(setup.records).toHaveLength(1)
  expect(published).toHaveLength(1)
  const record = fields(setup.records[0] as AttemptRecord)
  expect(fields(published[0] as LlmAttemptMessage)).toEqual(record)
  return record
}

describe('the caller stops the stream: stoppedBy caller, the rest as before', () => {
  it('the loop breaks after the first token', async () => {
    const setup = await streamOn()
    for await (const event of setup.stream) if (event.type === 'text') break
    await setup.stream.result.catch(() => {})
    expect(outcome(setup)).toEqual({
      decision: 'fail',
      errorKind: 'aborted',
      status: 200,
      stoppedBy: 'caller',
    })
  })

  it('the stream’s cancel, with a reason of the caller’s own', async () => {
    const setup = await streamOn()
    const reason = new Error('stop generating')
    expect(await stopAfterFirstToken(setup, () => setup.stream.cancel(reason))).toBe(reason)
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: 'caller' })
  })

  // Before, the deadline's own signal given as `signal` made every stop the
  // deadline's: the chat span read ERROR `aborted` where fetch said of the
  // same attempt's egress span that its caller stopped it.
  it('the loop breaks under a live deadline whose own signal is the call’s `signal` (a slice’s, from plan.run)', async () => {
    const setup = await streamOn({ signalOfDeadline: true })
    for await (const event of setup.stream) if (event.type === 'text') break
    await setup.stream.result.catch(() => {})
    expect(setup.deadline.done).toBe(false)
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: 'caller' })
  })

  it('the stream’s cancel under a live deadline whose own signal is the call’s `signal`', async () => {
    const setup = await streamOn({ signalOfDeadline: true })
    await stopAfterFirstToken(setup, () => setup.stream.cancel(new Error('stop generating')))
    expect(setup.deadline.done).toBe(false)
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: 'caller' })
  })

  it('the caller’s signal aborted mid-stream (fetch: its signal aborted mid-body)', async () => {
    const setup = await streamOn()
    const reason = new Error('the caller left')
    expect(await stopAfterFirstToken(setup, () => setup.controller.abort(reason))).toBe(reason)
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: 'caller' })
  })
})

describe('no caller stop: no stoppedBy', () => {
  it('the deadline expires mid-stream', async () => {
    const setup = await streamOn()
    await stopAfterFirstToken(setup, () => setup.clock.advance(60_000))
    expect(outcome(setup)).toEqual({
      decision: 'fail',
      errorKind: 'deadline_exceeded',
      status: 200,
      stoppedBy: undefined,
    })
  })

  it('the deadline is cancelled mid-stream (the client left)', async () => {
    const setup = await streamOn()
    await stopAfterFirstToken(setup, () => setup.deadline.cancel(new ClientClosedError()))
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: undefined })
  })

  it('the deadline’s own signal, passed as `signal`, when the deadline is cancelled', async () => {
    const setup = await streamOn({ signalOfDeadline: true })
    await stopAfterFirstToken(setup, () => setup.deadline.cancel(new ClientClosedError()))
    expect(outcome(setup)).toMatchObject({ errorKind: 'aborted', stoppedBy: undefined })
  })

  it('the deadline’s own signal, passed as `signal`, when the deadline expires', async () => {
    const setup = await streamOn({ signalOfDeadline: true })
    await stopAfterFirstToken(setup, () => setup.clock.advance(60_000))
    expect(outcome(setup).stoppedBy).toBeUndefined()
  })

  it('a provider’s stream cut after its first token', async () => {
    const server = await rawServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'Hel' } }] })}\n\n`,
        )
      })
    })
    servers.push(server)
    const model = fakes.adapter(
      openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      retry: { maxAttempts: 1, budgets: false },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(stream.result).rejects.toMatchObject({ code: 'STREAM_INTERRUPTED' })
    expect(records.map((r) => [r.decision, r.stoppedBy])).toEqual([['fail', undefined]])
    expect(published.map((m) => [m.decision, m.stoppedBy])).toEqual([['fail', undefined]])
  })

  it('a provider’s error status', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.error(500, { error: { message: 'boom', type: 'server_error' } }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      retry: { maxAttempts: 1, budgets: false },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    await expect(stream.result).rejects.toBeDefined()
    expect(records.map((r) => [r.decision, r.status, r.stoppedBy])).toEqual([
      ['fail', 500, undefined],
    ])
  })

  it('a break after the finish event: a success', async () => {
    const fake = await fakes.start({ dialect: 'openai', reply: reply.text('one two') })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }),
    )
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 10, stream: true },
      retry: { maxAttempts: 1, budgets: false },
      limits: { admission: false },
      onAttempt: (r) => records.push(r),
    })
    for await (const event of stream) if (event.type === 'finish') break
    await expect(stream.result).resolves.toMatchObject({ text: 'one two' })
    expect(records.map((r) => [r.decision, r.stoppedBy])).toEqual([['success', undefined]])
  })
})
