import {
  anthropicErrors,
  deepseekErrors,
  openAIErrors,
  type ReplyScript,
  reply,
} from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import type { AttemptRecord } from '../../src/call/AttemptRecord.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { isProviderError } from '../../src/errors/ProviderError.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import { useFakes, user } from '../call/support/fakes.js'
import { sendHi } from './support/sendHi.js'

const fakes = useFakes()
const request = { messages: [user('hi')], maxTokens: 8 }
const once = { maxAttempts: 1, budgets: false as const }

/** The call's one failure (`stream`: a streamed call's result), and its attempt records. */
async function failedCall(dialect: 'openai' | 'anthropic', answer: ReplyScript, stream = false) {
  const fake = await fakes.start({ dialect })
  fake.enqueue(answer)
  const records: AttemptRecord[] = []
  const options = {
    models: [fakes.adapterFor(dialect, fake.baseURL, 'm')],
    onAttempt: (r: AttemptRecord) => records.push(r),
    retry: once,
    limits: { admission: false as const },
  }
  const ended = stream
    ? callModel({ ...options, request: { ...request, stream: true } }).result
    : callModel({ ...options, request })
  const thrown = await ended.then(
    () => undefined,
    (error: unknown) => error,
  )
  return { thrown, records }
}

function providerErrorOf(thrown: unknown) {
  if (!isModelUnavailable(thrown)) throw new Error(`not a ModelUnavailableError: ${thrown}`)
  const cause = thrown.causes[0]?.cause
  if (!isProviderError(cause)) throw new Error(`not a ProviderError: ${cause}`)
  return cause
}

/**
 * A failed model call names the provider's request id of the answer it
 * failed on, as an answered one does (`providerRequestId`): what the
 * provider's support asks for. It reached neither the error nor the record.
 */
describe("a failed call keeps the provider's request id", () => {
  it("an OpenAI 429: its x-request-id on the ProviderError and the attempt's record", async () => {
    const { thrown, records } = await failedCall('openai', openAIErrors.rateLimited())
    const error = providerErrorOf(thrown)
    expect(error).toMatchObject({ status: 429, providerRequestId: 'req_fake429' })
    // Not in the normalised error, whose shape is what a gateway's error body says.
    expect(error.normalized).not.toHaveProperty('providerRequestId')
    expect(records.map((r) => [r.status, r.providerRequestId])).toEqual([[429, 'req_fake429']])
  })

  it('an Anthropic 529: its request-id', async () => {
    const { thrown, records } = await failedCall('anthropic', anthropicErrors.overloaded())
    expect(providerErrorOf(thrown)).toMatchObject({
      status: 529,
      providerRequestId: 'req_011CFakeHourglass',
    })
    expect(records.map((r) => r.providerRequestId)).toEqual(['req_011CFakeHourglass'])
  })

  it("an error frame in a 200 stream before its first token: the 200's request id", async () => {
    const { thrown, records } = await failedCall(
      'anthropic',
      { ...anthropicErrors.overloadedInStream(), headers: { 'request-id': 'req_stream529' } },
      true,
    )
    expect(providerErrorOf(thrown)).toMatchObject({
      kind: 'overloaded',
      status: 200,
      providerRequestId: 'req_stream529',
    })
    expect(records.map((r) => r.providerRequestId)).toEqual(['req_stream529'])
  })

  it('an error frame after the first token: on the interrupted stream’s cause and record', async () => {
    const { thrown, records } = await failedCall(
      'openai',
      reply.text('one two three', {
        headers: { 'x-request-id': 'req_cut' },
        streamError: { afterTokens: 2, body: { error: { message: 'boom', type: 'server_error' } } },
      }),
      true,
    )
    if (!isStreamInterrupted(thrown)) throw new Error(`not interrupted: ${thrown}`)
    expect(thrown.cause).toMatchObject({ providerRequestId: 'req_cut' })
    expect(records.map((r) => r.providerRequestId)).toEqual(['req_cut'])
  })

  it("DeepSeek's 402 through adapter.send: its x-ds-trace-id", async () => {
    const fake = await fakes.start({ dialect: 'deepseek' })
    fake.enqueue(deepseekErrors.insufficientBalance())
    const adapter = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'sk',
        model: 'deepseek-chat',
        dialect: 'deepseek',
      }),
    )
    const result = await sendHi(adapter, 'sk')
    if (result.ok) throw new Error('answered')
    expect(result.error.status).toBe(402)
    expect(result.error.providerRequestId).toMatch(/^[0-9a-f]{32}$/)
  })

  it('a key the provider echoes in its request id header is redacted there, as from its message', async () => {
    const KEY = 'sk-live-Zq8mV2xT4bN7cL1pR9sW3yK6'
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.error(
        500,
        { error: { message: 'boom', type: 'server_error' } },
        { 'x-request-id': `req_${KEY}` },
      ),
    )
    const adapter = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: KEY, model: 'm' }),
    )
    const result = await sendHi(adapter, KEY)
    if (result.ok) throw new Error('answered')
    expect(result.error.providerRequestId).toBe('req_[redacted]')
  })

  it('no answer, no id: a connection refused', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    const baseURL = fake.baseURL
    await fake.close()
    const result = await sendHi(fakes.adapterFor('openai', baseURL, 'm'), 'sk')
    if (result.ok) throw new Error('answered')
    expect(result.error.status).toBe(0)
    expect(result.error.providerRequestId).toBeUndefined()
  })
})
