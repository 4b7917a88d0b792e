import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './support/harness.js'

/**
 * An OpenAI-compatible upstream that names no finish reason in its stream
 * (a content chunk with `finish_reason: null`, a usage chunk, `[DONE]`).
 * The gateway passed it on as a complete answer with no finish chunk and no
 * usage chunk; openai-node's stream helper then threw "missing finish_reason
 * for choice 0", and the request was charged by estimate.
 */
describe('a streamed answer whose upstream names no finish reason', () => {
  let upstream: Server | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    upstream?.closeAllConnections()
    await new Promise((resolve) => upstream?.close(resolve))
    harness = undefined
    upstream = undefined
  })

  it('reaches the official client with a finish and the provider’s usage', async () => {
    upstream = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const chunk = (body: object) =>
          `data: ${JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'x', ...body })}\n\n`
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.end(
          chunk({
            choices: [
              { index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null },
            ],
          }) +
            chunk({
              choices: [],
              usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
            }) +
            'data: [DONE]\n\n',
        )
      })
    })
    await new Promise<void>((resolve) => upstream!.listen(0, '127.0.0.1', resolve))
    const port = (upstream.address() as AddressInfo).port
    harness = await startHarness({
      providers: {
        p: { dialect: 'openai', baseURL: `http://127.0.0.1:${port}/v1`, apiKeys: ['k'] },
      },
      models: { m: { fallback: [{ provider: 'p', model: 'x' }] } },
    })
    const stream = harness.client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream_options: { include_usage: true },
    })
    const completion = await stream.finalChatCompletion()
    expect(completion.choices[0]?.message.content).toBe('hi')
    expect(completion.choices[0]?.finish_reason).toBe('stop')
    expect(completion.usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 1 })
  })
})
