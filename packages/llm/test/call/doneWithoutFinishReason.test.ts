import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import type { StreamEvent } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const chunk = (body: object) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', ...body })}\n\n`

/**
 * An OpenAI-compatible server that never names a finish reason: a content
 * chunk with `finish_reason: null`, a usage chunk, `[DONE]`. The whole answer
 * of such a server reads `unknown`; its stream ended with neither a finish nor
 * an error, and the usage it reported was dropped (charged by estimate).
 */
describe('an OpenAI stream whose [DONE] comes with no finish reason', () => {
  it('ends with one finish (`unknown`) carrying the usage the provider reported', async () => {
    const server = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        chunk({ choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }] }) +
        chunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }) +
        'data: [DONE]\n\n',
    })
    servers.push(server)
    const model = fakes.adapter(
      openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
    )
    const stream = callModel({
      models: [model],
      request: { messages: [user('hi')], maxTokens: 8, stream: true },
      limits: { admission: false },
    })
    const events: StreamEvent[] = []
    for await (const event of stream) events.push(event)
    const finishes = events.filter((e) => e.type === 'finish')
    expect(finishes).toHaveLength(1)
    expect(finishes[0]).toMatchObject({
      finishReason: 'unknown',
      usage: { inputTokens: 3, outputTokens: 1 },
    })
    const answer = await stream.result
    expect(answer).toMatchObject({ text: 'hi', finishReason: 'unknown' })
    expect(answer.usage).toMatchObject({ inputTokens: 3, outputTokens: 1 })
    expect(server.records).toHaveLength(1)
  })
})
