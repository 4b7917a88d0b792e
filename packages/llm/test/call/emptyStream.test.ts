import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isModelUnavailable } from '../../src/errors/ModelUnavailableError.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

/** A 200 SSE stream whose whole body is `body`. */
async function streamOf(body: string) {
  const server = await faultServer({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body,
  })
  servers.push(server)
  return server
}

const request = { messages: [user('hi')], maxTokens: 8, stream: true as const }

describe('a 200 stream with no answer in it', () => {
  it('`data: [DONE]` alone is a retryable server_error, not an empty success', async () => {
    const server = await streamOf('data: [DONE]\n\n')
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
    const stream = callModel({
      models: [model],
      request,
      retry: { maxAttempts: 2, delay: FAST_RETRIES },
      limits: { admission: false },
    })
    const error = await stream.result.catch((e: unknown) => e)
    expect(isModelUnavailable(error)).toBe(true)
    const cause = (error as { lastCause?: { kind?: string; message?: string } }).lastCause
    expect(cause).toMatchObject({ kind: 'server_error' })
    expect(String(cause?.message)).toMatch(/ended with no answer/)
    // Asked again, as a whole answer's empty 200 body is.
    expect(server.records).toHaveLength(2)
  })

  it('falls back to the next model, whose answer is delivered', async () => {
    const server = await streamOf('data: [DONE]\n\n')
    const backup = await fakes.start({ dialect: 'openai' })
    const broken = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm', name: 'broken' }),
    )
    const healthy = fakes.adapter(
      openAICompatible({ baseURL: backup.baseURL, apiKey: 'sk', model: 'gpt-4o-mini' }),
    )
    const stream = callModel({
      models: [broken, healthy],
      request,
      retry: { maxAttempts: 1 },
      limits: { admission: false },
    })
    let text = ''
    for await (const event of stream) if (event.type === 'text') text += event.text
    expect(text).toBe('Hello from the fake provider.')
    expect((await stream.result).provider).toBe('openai')
  })

  it('an empty answer the provider did finish is still a success', async () => {
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const server = await streamOf(
      `${chunk({ role: 'assistant', content: '' }, null)}${chunk({}, 'length')}data: [DONE]\n\n`,
    )
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
    const answer = await callModel({ models: [model], request, limits: { admission: false } })
      .result
    expect(answer).toMatchObject({ text: '', finishReason: 'length' })
    // Not asked again as "no answer": only once more with the cap raised
    // (cut at its cap before a token), which answers the same.
    expect(server.records).toHaveLength(2)
  })
})
