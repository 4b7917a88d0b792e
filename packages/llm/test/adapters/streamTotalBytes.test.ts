import { once } from 'node:events'
import type { ServerResponse } from 'node:http'
import { Deadline } from '@hourglass/core'
import { reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_STREAM_BYTES,
} from '../../src/adapters/createAdapter.js'
import type { ModelAdapter } from '../../src/adapters/ModelAdapter.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { CostBudget } from '../../src/budget/CostBudget.js'
import { estimatePromptTokens } from '../../src/budget/estimatePromptTokens.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import {
  isModelUnavailable,
  type ModelUnavailableError,
} from '../../src/errors/ModelUnavailableError.js'
import { isProviderError, type ProviderError } from '../../src/errors/ProviderError.js'
import {
  isResponseTooLarge,
  type ResponseTooLargeError,
} from '../../src/errors/ResponseTooLargeError.js'
import {
  isStreamInterrupted,
  type StreamInterruptedError,
} from '../../src/errors/StreamInterruptedError.js'
import { FAST_RETRIES, useFakes, user } from '../call/support/fakes.js'
import { rawServer } from './support/rawServer.js'

const fakes = useFakes()
const messages = [user('Tell me everything.')]
const maxTokens = 100
const retry = { maxAttempts: 3, delay: FAST_RETRIES }
// $1 per input token, $2 per output token: costs read as token counts.
const prices = {
  big: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
  small: { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 },
}
const PROMPT_USD = estimatePromptTokens({ messages })
const KiB = 1024
/** One token of 256 characters: a stream of them passes a few KiB in a few events. */
const WORD = ` ${'w'.repeat(255)}`

/** A bound on the endless streams, so that reading one for ever fails the test rather than hanging it. */
const guard = () => Deadline.after(5000)

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

function adapterAt(
  baseURL: string,
  model: string,
  maxStreamBytes?: number,
  maxResponseBytes?: number,
): ModelAdapter {
  return fakes.adapter(
    openAICompatible({
      baseURL,
      apiKey: 'sk',
      model,
      ...(maxStreamBytes === undefined ? {} : { maxStreamBytes }),
      ...(maxResponseBytes === undefined ? {} : { maxResponseBytes }),
    }),
  )
}

/** Writes `chunk` until the client goes away, honouring backpressure. */
async function writeForever(res: ServerResponse, chunk: Buffer): Promise<void> {
  const closed = once(res, 'close')
  while (!res.destroyed && !res.writableEnded) {
    if (!res.write(chunk)) await Promise.race([once(res, 'drain'), closed])
  }
}

/**
 * A 200 event stream that never ends and never sends a token: SSE comments,
 * `chunk` at a time, for as long as the client reads (a broken or hostile
 * proxy). `hits` counts requests; `closed` resolves when each connection goes.
 */
async function endlessStream(chunk: Buffer) {
  const state = { hits: 0, closed: [] as Promise<unknown>[], baseURL: '' }
  const server = await rawServer((req, res) => {
    state.hits++
    req.resume()
    state.closed.push(once(res, 'close'))
    res.writeHead(200, { 'content-type': 'text/event-stream' })
    void writeForever(res, chunk)
  })
  servers.push(server)
  state.baseURL = server.baseURL
  return state
}

const keepAlives = (bytes: number) => Buffer.from(': keep-alive\n\n'.repeat(bytes / 16))

describe('a streamed answer is bounded in total by maxStreamBytes', () => {
  it('an endless stream before its first token: RESPONSE_TOO_LARGE, connection closed, not resent; the fallback answers', async () => {
    const upstream = await endlessStream(keepAlives(16 * KiB))
    const backup = await fakes.start({
      dialect: 'openai',
      reply: reply.text('from the backup', { usage: { inputTokens: 10, outputTokens: 5 } }),
    })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const answer = await callModel({
      models: [
        adapterAt(upstream.baseURL, 'big', 64 * KiB),
        fakes.adapterFor('openai', backup.baseURL, 'small'),
      ],
      deadline: guard(),
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: { budget, admission: false },
    }).result
    expect(answer.text).toBe('from the backup')
    expect(upstream.hits).toBe(1)
    expect(backup.requests).toHaveLength(1)
    expect(records[0]).toMatchObject({
      model: 'big',
      status: 200,
      errorClass: 'ResponseTooLargeError',
      errorKind: 'server_error',
      decision: 'fallback',
    })
    // Billed as a stream that took the request and sent no token: its prompt.
    expect(records[0]?.costUsd).toBe(PROMPT_USD)
    expect(budget.spentUsd).toBe(PROMPT_USD + 10 + 2 * 5)
    // Not read on: the server saw its connection go.
    await Promise.all(upstream.closed)
  })

  it('without a fallback: fails after that one request, with the typed cause', async () => {
    const upstream = await endlessStream(keepAlives(16 * KiB))
    const error = await callModel({
      models: [adapterAt(upstream.baseURL, 'big', 64 * KiB)],
      deadline: guard(),
      request: { messages, maxTokens, stream: true },
      retry,
      limits: { admission: false },
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause as ProviderError
    expect(isProviderError(cause)).toBe(true)
    expect(cause).toMatchObject({ kind: 'server_error', retryable: false, status: 200 })
    expect(cause.message).toMatch(/maxStreamBytes/)
    const tooLarge = cause.cause as ResponseTooLargeError
    expect(isResponseTooLarge(tooLarge)).toBe(true)
    expect(tooLarge).toMatchObject({
      code: 'RESPONSE_TOO_LARGE',
      provider: 'openai',
      model: 'big',
      status: 200,
      limitBytes: 64 * KiB,
    })
    // Stopped at the chunk that went past the limit (a socket read is at most 64 KiB).
    expect(tooLarge.readBytes).toBeGreaterThan(64 * KiB)
    expect(tooLarge.readBytes).toBeLessThanOrEqual(2 * 64 * KiB)
    expect(upstream.hits).toBe(1)
    await Promise.all(upstream.closed)
  })

  it('past the limit after its first tokens: StreamInterruptedError with what arrived, charged as a cut stream', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('', { tokens: Array.from({ length: 64 }, () => WORD) }),
    })
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const records: AttemptRecord[] = []
    const error = await callModel({
      models: [adapterAt(fake.baseURL, 'big', 8 * KiB)],
      request: { messages, maxTokens, stream: true },
      retry,
      onAttempt: (r) => records.push(r),
      limits: { budget, admission: false },
    }).result.catch((e: unknown) => e)
    expect(isStreamInterrupted(error)).toBe(true)
    const { partialText } = error as StreamInterruptedError
    // Whole tokens, the ones whose events came within the limit: far from the 64 sent.
    expect(partialText.length).toBeGreaterThan(0)
    expect(partialText).toBe(WORD.repeat(partialText.length / WORD.length))
    expect(partialText.length).toBeLessThan(8 * KiB)
    const cause = (error as StreamInterruptedError).cause as ProviderError
    expect(isResponseTooLarge(cause.cause)).toBe(true)
    expect(fake.requests).toHaveLength(1)
    // By characters, at most the request's maxTokens (each fake token is 256 characters).
    const charged = PROMPT_USD + 2 * Math.min(Math.ceil(partialText.length / 4), maxTokens)
    expect(budget.spentUsd).toBe(charged)
    expect(records[0]).toMatchObject({ decision: 'fail', costUsd: charged })
  })

  it('the default is 128 MiB, four times the 32 MiB of a whole answer: a stream announced longer is refused unread, with no option set', async () => {
    expect(DEFAULT_MAX_STREAM_BYTES).toBe(128 * 1024 * KiB)
    expect(DEFAULT_MAX_STREAM_BYTES).toBe(4 * DEFAULT_MAX_RESPONSE_BYTES)
    let hits = 0
    const closed: Promise<unknown>[] = []
    const server = await rawServer((req, res) => {
      hits++
      req.resume()
      closed.push(once(res, 'close'))
      // A proxy that buffered the whole stream: it knows, and says, its length.
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'content-length': String(DEFAULT_MAX_STREAM_BYTES + 1),
      })
      res.write(': keep-alive\n\n')
    })
    servers.push(server)
    const budget = new CostBudget({ limitUsd: 10_000, prices })
    const error = await callModel({
      models: [adapterAt(server.baseURL, 'big')],
      deadline: guard(),
      request: { messages, maxTokens, stream: true },
      retry,
      limits: { budget, admission: false },
    }).result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as ModelUnavailableError).lastCause as ProviderError
    expect(cause).toMatchObject({ kind: 'server_error', retryable: false, status: 200 })
    const tooLarge = cause.cause as ResponseTooLargeError
    expect(isResponseTooLarge(tooLarge)).toBe(true)
    expect(tooLarge).toMatchObject({
      limitBytes: DEFAULT_MAX_STREAM_BYTES,
      option: 'maxStreamBytes',
      declaredBytes: DEFAULT_MAX_STREAM_BYTES + 1,
      readBytes: 0,
    })
    expect(hits).toBe(1)
    // Buffered whole, so generated whole: charged as a whole answer past the limit is.
    expect(budget.spentUsd).toBe(budget.estimate('big', { messages, maxTokens }))
    await Promise.all(closed)
  })
})

describe('maxResponseBytes bounds a whole answer, not a stream', () => {
  it('a stream longer than maxResponseBytes is read to its end when it is within maxStreamBytes', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('', { tokens: Array.from({ length: 64 }, () => WORD) }),
    })
    const answer = await callModel({
      models: [adapterAt(fake.baseURL, 'big', undefined, 4 * KiB)],
      request: { messages, maxTokens, stream: true },
      retry,
      limits: { admission: false },
    }).result
    expect(answer.text).toBe(WORD.repeat(64))
  })

  it('maxStreamBytes is checked like maxResponseBytes: no byte count, no adapter', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '64']) {
      expect(() =>
        openAICompatible({
          baseURL: 'http://127.0.0.1:1',
          apiKey: 'sk',
          model: 'm',
          maxStreamBytes: bad as number,
        }),
      ).toThrow(/maxStreamBytes must be a whole number of bytes above 0/)
    }
  })
})
