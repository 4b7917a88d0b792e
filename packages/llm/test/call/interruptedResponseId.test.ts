import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { anthropicTextOpening } from '../adapters/support/anthropicFrames.js'
import { useStreamServers } from '../adapters/support/streamServers.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'
import { openAIChunk } from './support/streamingServer.js'

const fakes = useFakes()

const { cutAfter } = useStreamServers()

/** The failed call's error and its attempt records. */
async function cut(dialect: 'anthropic' | 'openai' | 'gemini', baseURL: string) {
  const records: AttemptRecord[] = []
  const error = await callModel({
    models: [fakes.adapterFor(dialect, baseURL, 'big')],
    deadline: Deadline.after(10_000),
    request: { messages: [user('Hi')], maxTokens: 100, stream: true },
    retry: { maxAttempts: 1, delay: FAST_RETRIES },
    onAttempt: (record) => records.push(record),
  }).result.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )
  return { error, records }
}

// The provider's id of the answer came with its first event; the stream broke
// before the finish that used to be the only place it was read from. The
// operator asking the provider about a broken, billed answer needs it: the
// attempt's record carries it (`responseId`, what the gateway logs as
// `providerResponseId` and OTel sets as `gen_ai.response.id`), as a
// completed answer's does.
describe('a stream cut after its first token names the provider’s response id on its attempt record', () => {
  it('OpenAI: the chunks’ `id`', async () => {
    const baseURL = await cutAfter(
      openAIChunk({ role: 'assistant', content: 'Hello' }, null, {
        id: 'chatcmpl-cut1',
        model: 'big',
      }),
    )
    const { error, records } = await cut('openai', baseURL)
    expect(isStreamInterrupted(error)).toBe(true)
    expect(records.at(-1)).toMatchObject({ decision: 'fail', responseId: 'chatcmpl-cut1' })
  })

  it('Anthropic: `message_start.message.id`', async () => {
    const baseURL = await cutAfter(
      anthropicTextOpening({ id: 'msg_cut1', model: 'big', inputTokens: 10, text: 'Hello' }),
    )
    const { error, records } = await cut('anthropic', baseURL.replace(/\/v1$/, ''))
    expect(isStreamInterrupted(error)).toBe(true)
    expect(records.at(-1)).toMatchObject({ decision: 'fail', responseId: 'msg_cut1' })
  })

  it('Gemini: the chunks’ `responseId`', async () => {
    const chunk = `data: ${JSON.stringify({
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hello' }] } }],
      modelVersion: 'big',
      responseId: 'gem-cut1',
    })}\r\n\r\n`
    const baseURL = await cutAfter(chunk)
    const { error, records } = await cut('gemini', baseURL.replace(/\/v1$/, ''))
    expect(isStreamInterrupted(error)).toBe(true)
    expect(records.at(-1)).toMatchObject({ decision: 'fail', responseId: 'gem-cut1' })
  })

  it('OpenAI: a stream that took the request, named its id and was cut before any token', async () => {
    const baseURL = await cutAfter(
      `data: ${JSON.stringify({
        id: 'chatcmpl-cut2',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'big',
        choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }],
      })}\n\n`,
    )
    const { error, records } = await cut('openai', baseURL)
    expect(isStreamInterrupted(error)).toBe(false)
    expect(records.at(-1)).toMatchObject({ decision: 'fail', responseId: 'chatcmpl-cut2' })
  })
})
