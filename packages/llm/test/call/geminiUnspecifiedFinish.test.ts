import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import type { ChatResponse } from '../../src/types.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

// Gemini's `FINISH_REASON_UNSPECIFIED` is the enum's "Default value. This
// value is unused." (ai.google.dev `FinishReason`): Gemini says no reason
// with it, as with no `finishReason` at all. A candidate with it and no
// content is therefore no answer — a retryable server_error, asked again
// (the rule of `noAnswer.ts`, and of a stream that ends with neither) — not
// an empty success `unknown`. With content it is still an answer, `unknown`.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const body = (parts: object[]) => ({
  candidates: [
    { content: { role: 'model', parts }, finishReason: 'FINISH_REASON_UNSPECIFIED', index: 0 },
  ],
  usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 },
  modelVersion: 'm',
})

async function ask(stream: boolean, parts: object[]) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' },
    body: stream ? `data: ${JSON.stringify(body(parts))}\r\n\r\n` : JSON.stringify(body(parts)),
  })
  servers.push(server)
  const records: AttemptRecord[] = []
  const options = {
    models: [fakes.adapter(gemini({ baseURL: server.url, apiKey: 'sk', model: 'm' }))],
    retry: { maxAttempts: 2, delay: FAST_RETRIES },
    limits: { admission: false as const },
    onAttempt: (r: AttemptRecord) => records.push(r),
  }
  const run = async (): Promise<ChatResponse> => {
    if (!stream) return callModel({ ...options, request: { messages: [user('hi')], maxTokens: 8 } })
    const call = callModel({
      ...options,
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
    })
    for await (const _ of call) {
      // drained
    }
    return call.result
  }
  const outcome = await run().then(
    (answer) => ({ answer, error: undefined }),
    (error: unknown) => ({ answer: undefined, error }),
  )
  return { ...outcome, records, requests: server.records.length }
}

describe('Gemini FINISH_REASON_UNSPECIFIED', () => {
  it.each([false, true])(
    'with no content is no answer, asked again (stream: %s)',
    async (stream) => {
      const outcome = await ask(stream, [])
      expect(outcome.answer).toBeUndefined()
      expect(isModelUnavailable(outcome.error)).toBe(true)
      const cause = (outcome.error as { lastCause?: { kind?: string; message?: string } }).lastCause
      expect(cause).toMatchObject({ kind: 'server_error', retryable: true, status: 200 })
      expect(String(cause?.message)).toMatch(/no answer/)
      // Before: one request, an empty success with finishReason 'unknown'.
      expect(outcome.requests).toBe(2)
    },
  )

  it.each([false, true])(
    'with only an empty text part is no answer too (stream: %s)',
    async (stream) => {
      const outcome = await ask(stream, [{ text: '' }])
      expect(outcome.answer).toBeUndefined()
      expect(outcome.requests).toBe(2)
    },
  )

  it.each([false, true])('with content is an answer, `unknown` (stream: %s)', async (stream) => {
    const outcome = await ask(stream, [{ text: 'hi' }])
    expect(outcome.answer).toMatchObject({ text: 'hi', finishReason: 'unknown' })
    expect(outcome.requests).toBe(1)
  })
})
