import diagnostics_channel from 'node:diagnostics_channel'
import { once } from 'node:events'
import { Deadline, isDeadlineExceeded, ManualClock } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { rawServer } from '../adapters/support/rawServer.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()

// $1 per input token, $2 per output token: costs read as token counts.
const prices = { big: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } }
const messages = [user('Write at length about the sea.')]
const maxTokens = 100
const PROMPT_USD = estimatePromptTokens({ messages })
const WHOLE_USD = PROMPT_USD + 2 * maxTokens
const retry = { maxAttempts: 3, delay: FAST_RETRIES }
const limits = (budget: CostBudget) => ({ budget, admission: false as const })

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

/**
 * A provider that sends a 2xx's status line, headers and the start of its
 * JSON body, then holds the rest: the answer was generated (a whole answer
 * comes after the whole generation) and is on its way. `closed` resolves
 * when the client drops the connection.
 */
async function heldAnswer(status = 200) {
  const closed: Promise<unknown>[] = []
  const server = await rawServer((req, res) => {
    req.resume()
    closed.push(once(res, 'close'))
    res.writeHead(status, { 'content-type': 'application/json' })
    res.write(
      '{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"content":"The sea',
    )
  })
  servers.push(server)
  const adapter = fakes.adapterFor('openai', server.baseURL, 'big')
  return { adapter, closed }
}

/**
 * Resolves once the next response's headers have reached the client and the
 * code awaiting them has run (undici publishes the headers just before it
 * hands them over; what awaits them runs in the microtasks after).
 */
function headersRead(): Promise<void> {
  return new Promise((resolve) => {
    const onHeaders = () => {
      diagnostics_channel.unsubscribe('undici:request:headers', onHeaders)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe('undici:request:headers', onHeaders)
  })
}

describe('a non-streamed 2xx whose body the call stops while it is read is charged as a whole answer', () => {
  it('ended by the deadline (a manual clock): the prompt estimate plus maxTokens; the deadline’s error as it is', async () => {
    const { adapter, closed } = await heldAnswer()
    const clock = new ManualClock()
    const deadline = Deadline.after(30_000, { clock })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const reading = headersRead()
    const call = callModel({
      models: [adapter],
      deadline,
      request: { messages, maxTokens },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).catch((e: unknown) => e)
    await reading
    clock.advance(30_000)
    const error = await call
    expect(isDeadlineExceeded(error)).toBe(true)
    expect(error).toBe(deadline.reason)
    expect(budget.spentUsd).toBe(WHOLE_USD)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      decision: 'fail',
      errorKind: 'deadline_exceeded',
      costUsd: WHOLE_USD,
    })
    await Promise.all(closed)
  })

  it('ended by the caller’s signal: charged the same; the signal’s reason as it is', async () => {
    const { adapter, closed } = await heldAnswer(201)
    const controller = new AbortController()
    const reason = new Error('the user left')
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const reading = headersRead()
    const call = callModel({
      models: [adapter],
      signal: controller.signal,
      request: { messages, maxTokens },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    }).catch((e: unknown) => e)
    await reading
    controller.abort(reason)
    expect(await call).toBe(reason)
    expect(budget.spentUsd).toBe(WHOLE_USD)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({ decision: 'fail', errorKind: 'aborted', costUsd: WHOLE_USD })
    await Promise.all(closed)
  })

  it('a stream request answered with JSON, ended by the caller’s signal while read: charged the same', async () => {
    const { adapter } = await heldAnswer()
    const controller = new AbortController()
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const reading = headersRead()
    const stream = callModel({
      models: [adapter],
      signal: controller.signal,
      request: { messages, maxTokens, stream: true },
      retry,
      limits: limits(budget),
    })
    const ended = stream.result.catch((e: unknown) => e)
    await reading
    controller.abort(new Error('stop'))
    expect(await ended).toMatchObject({ message: 'stop' })
    expect(budget.spentUsd).toBe(WHOLE_USD)
  })

  it('a stream request answered with JSON, cut by firstTokenTimeoutMs while read: a timeout with its 2xx status, charged the same', async () => {
    const { adapter, closed } = await heldAnswer()
    const clock = new ManualClock()
    const deadline = Deadline.after(30_000, { clock })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const reading = headersRead()
    const stream = callModel({
      models: [adapter],
      deadline,
      firstTokenTimeoutMs: 1000,
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    const ended = stream.result.catch((e: unknown) => e)
    await reading
    clock.advance(1000)
    const error = await ended
    expect(error).toMatchObject({ code: 'MODEL_UNAVAILABLE' })
    expect(records).toHaveLength(1)
    // The answer's headers had come: not "no response headers", not status 0.
    expect(records[0]).toMatchObject({ status: 200, errorKind: 'timeout', costUsd: WHOLE_USD })
    expect(budget.spentUsd).toBe(WHOLE_USD)
    const cause = (error as { cause?: { message?: string } }).cause
    expect(cause?.message).toMatch(/a whole answer \(JSON, not a stream\) was still being read/)
    await Promise.all(closed)
  })

  it('stopped before any response headers came: nothing is charged (the provider may never have taken it)', async () => {
    let arrived: () => void = () => {}
    const received = new Promise<void>((resolve) => {
      arrived = resolve
    })
    const server = await rawServer((req) => {
      req.resume()
      arrived()
    })
    servers.push(server)
    const controller = new AbortController()
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const call = callModel({
      models: [fakes.adapterFor('openai', server.baseURL, 'big')],
      signal: controller.signal,
      request: { messages, maxTokens },
      retry,
      limits: limits(budget),
    }).catch((e: unknown) => e)
    await received
    controller.abort(new Error('stop'))
    expect(await call).toMatchObject({ message: 'stop' })
    expect(budget.spentUsd).toBe(0)
  })
})

describe('a stream the call stops after its first token is charged its prompt and what arrived (as before)', () => {
  const tokens = ['Once', ' upon', ' a', ' time']

  it('ended by the deadline (a manual clock)', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('', { tokens, tokenDelayMs: 60_000 }),
    })
    const clock = new ManualClock()
    const deadline = Deadline.after(30_000, { clock })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'big')],
      deadline,
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    const ended = stream.result.catch((e: unknown) => e)
    const texts: string[] = []
    const read = (async () => {
      for await (const event of stream) {
        if (event.type !== 'text') continue
        texts.push(event.text)
        clock.advance(30_000)
      }
    })().catch(() => {})
    const error = await ended
    await read
    expect(texts).toEqual(['Once'])
    // After the first token the deadline ends it as a break: what arrived, with the deadline as cause.
    expect(isStreamInterrupted(error)).toBe(true)
    expect((error as Error).cause).toBe(deadline.reason)
    // 'Once': 1 output token.
    expect(budget.spentUsd).toBe(PROMPT_USD + 2)
    expect(records[0]).toMatchObject({ decision: 'fail', costUsd: PROMPT_USD + 2 })
  })

  it('ended by the caller’s signal', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('', { tokens, tokenDelayMs: 60_000 }),
    })
    const controller = new AbortController()
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const stream = callModel({
      models: [fakes.adapterFor('openai', fake.baseURL, 'big')],
      signal: controller.signal,
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: limits(budget),
    })
    const ended = stream.result.catch((e: unknown) => e)
    const read = (async () => {
      for await (const event of stream)
        if (event.type === 'text') controller.abort(new Error('stop'))
    })().catch(() => {})
    expect(await ended).toMatchObject({ message: 'stop' })
    await read
    expect(budget.spentUsd).toBe(PROMPT_USD + 2)
    expect(records[0]).toMatchObject({
      decision: 'fail',
      errorKind: 'aborted',
      costUsd: PROMPT_USD + 2,
    })
  })
})
