import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../src/adapters/openAICompatible.js'
import { estimatePromptTokens } from '../src/budget/estimatePromptTokens.js'
import { callModel } from '../src/call/callModel.js'
import type { ChatMessage } from '../src/types.js'
import { rawServer } from './adapters/support/rawServer.js'

const servers: Array<{ close(): void }> = []
afterEach(() => { for (const s of servers.splice(0)) s.close() })

async function capture() {
  const bodies: Array<{ messages: Array<Record<string, unknown>> }> = []
  const server = await rawServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (p: string) => (text += p))
    req.on('end', () => {
      bodies.push(JSON.parse(text))
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } }))
    })
  })
  servers.push(server)
  return { baseURL: server.baseURL, bodies }
}

const messages: ChatMessage[] = [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: [{ type: 'thinking', thinking: 'x'.repeat(9000) }, { type: 'text', text: 'hello' }] },
  { role: 'user', content: 'and then?' },
]
const bare = estimatePromptTokens({ messages: [
  { role: 'user', content: 'hi' },
  { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
  { role: 'user', content: 'and then?' },
] })

describe('rF', () => {
  it.each(['qwen', 'openai', 'ernie', 'doubao'] as const)('replayThinking: true on %s sends the thinking the estimate leaves out', async (dialect) => {
    const server = await capture()
    const adapter = openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'm', dialect, replayThinking: true })
    await callModel({ models: [adapter], request: { messages, maxTokens: 16 }, deadline: false, limits: { admission: false } } as never)
    await adapter.close()
    const sentAssistant = server.bodies[0]!.messages[1]!
    const sentThinking = String(sentAssistant['reasoning_content'] ?? sentAssistant['reasoning'] ?? '')
    console.log(dialect, 'sent thinking chars', sentThinking.length, 'estimate', estimatePromptTokens({ messages }, adapter.dialect.name), 'bare', bare)
    // Sent 9000 chars of thinking: the estimate must be larger than without it.
    expect(estimatePromptTokens({ messages }, adapter.dialect.name)).toBeGreaterThan(bare + 2000)
  })
  it('deepseek default: a non-tool turn is not sent its thinking, yet counted', async () => {
    const server = await capture()
    const adapter = openAICompatible({ baseURL: server.baseURL, apiKey: 'sk', model: 'm', dialect: 'deepseek' })
    await callModel({ models: [adapter], request: { messages, maxTokens: 16 }, deadline: false, limits: { admission: false } } as never)
    await adapter.close()
    console.log('deepseek sent', Object.keys(server.bodies[0]!.messages[1]!), 'estimate', estimatePromptTokens({ messages }, 'deepseek'), 'bare', bare)
    expect(estimatePromptTokens({ messages }, 'deepseek')).toBe(bare)
  })
})
