import type { ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent } from '../../src/types.js'
import { rawServer } from '../adapters/support/rawServer.js'

/**
 * vLLM returns a reasoning model's thinking as `reasoning`, not DeepSeek's
 * `reasoning_content` (renamed in vllm-project/vllm#27752, the old name
 * removed by #33402), as OpenRouter and Ollama's OpenAI-compatible API do.
 * Read as `reasoning_content` only, the thinking was dropped — and a stream
 * that thinks for a while before its first word was taken for one that sent
 * no token: held back, and failed at `firstTokenTimeoutMs` while the model
 * was generating (and billing) it.
 */

const servers: Array<{ close(): void }> = []
afterEach(() => {
  for (const server of servers.splice(0)) server.close()
})

const messages = [{ role: 'user' as const, content: 'is 91 prime?' }]
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', model: 'qwen3', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

describe("an OpenAI-compatible server's `reasoning` field (vLLM, OpenRouter, Ollama)", () => {
  it('a whole answer keeps it as thinking', () => {
    const answer = dialects.openai.parseResponse({
      id: 'c1',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'No: 7 × 13.', reasoning: '91 = 7 · 13' },
          finish_reason: 'stop',
        },
      ],
    })
    // Marked with the name it came under, the one `replayThinking` sends it back as.
    expect(answer.content).toEqual([
      { type: 'thinking', thinking: '91 = 7 · 13', field: 'reasoning' },
      { type: 'text', text: 'No: 7 × 13.' },
    ])
  })

  it('one said under both names (vLLM during the rename) is thinking once', () => {
    const parser = dialects.openai.createStreamParser()
    const events = parser.parseStreamEvent({
      event: 'message',
      data: JSON.stringify({
        id: 'c1',
        choices: [{ index: 0, delta: { reasoning: 'hm', reasoning_content: 'hm' } }],
      }),
    })
    // Marked `reasoning`: the only name vLLM reads back (vllm-project/vllm#38488).
    expect(events).toEqual([{ type: 'thinking', thinking: 'hm', field: 'reasoning' }])
  })

  it('streamed, the thinking is the first token: delivered at once, no first-token timeout', async () => {
    // The server thinks aloud, then holds its answer until the consumer has
    // read a thinking event: a client that holds the thinking back waits
    // for a first token that never comes, until firstTokenTimeoutMs.
    let release: (() => void) | undefined
    const thinkingRead = new Promise<void>((resolve) => {
      release = resolve
    })
    const server = await rawServer((req, res: ServerResponse) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(chunk({ role: 'assistant', content: '' }))
      res.write(chunk({ reasoning: '91 = 7 · 13' }))
      void thinkingRead.then(() => {
        res.write(chunk({ content: 'No.' }))
        res.write(chunk({}, 'stop'))
        res.end('data: [DONE]\n\n')
      })
    })
    servers.push(server)
    const adapter = openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'qwen3' })
    const stream = callModel({
      models: [adapter],
      request: { messages, maxTokens: 256, stream: true },
      firstTokenTimeoutMs: 2000,
      limits: { admission: false },
    })
    const events: StreamEvent[] = []
    try {
      for await (const event of stream) {
        events.push(event)
        if (event.type === 'thinking') release?.()
      }
      const answer = await stream.result
      expect(answer.content).toEqual([
        { type: 'thinking', thinking: '91 = 7 · 13', field: 'reasoning' },
        { type: 'text', text: 'No.' },
      ])
      expect(events.map((event) => event.type)).toEqual(['thinking', 'text', 'finish'])
    } finally {
      release?.()
      await adapter.close()
    }
  })
})
