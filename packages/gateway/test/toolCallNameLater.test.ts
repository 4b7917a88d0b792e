import { type FaultServer, faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { type Harness, startHarness } from './support/harness.js'

// An OpenAI-compatible upstream that opens a streamed tool call with its id
// and no function name, and names it in a later delta (vercel/ai #14722).
// The gateway sent a call's name with its first chunk only: the official
// client's stream helper assembled a call named "".

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

let upstream: FaultServer | undefined
let harness: Harness | undefined
afterEach(async () => {
  await harness?.close()
  await upstream?.close()
  harness = undefined
  upstream = undefined
})

describe('a streamed tool call named after its opening delta, through the gateway', () => {
  it('reaches the official client with its name', async () => {
    upstream = await faultServer({
      type: 'respond',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        chunk({ role: 'assistant' }) +
        chunk({
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { arguments: '' } }],
        }) +
        chunk({ tool_calls: [{ index: 0, function: { name: 'bash', arguments: '{"command"' } }] }) +
        chunk({ tool_calls: [{ index: 0, function: { arguments: ':"ls"}' } }] }) +
        chunk({}, 'tool_calls') +
        'data: [DONE]\n\n',
    })
    harness = await startHarness({
      providers: { up: { dialect: 'openai', baseURL: `${upstream.url}/v1`, apiKeys: ['k'] } },
      models: { m: { fallback: [{ provider: 'up', model: 'm' }] } },
    })
    const stream = harness.client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'List the files.' }],
      tools: [
        {
          type: 'function',
          function: { name: 'bash', parameters: { type: 'object', properties: {} } },
        },
      ],
    })
    const done = await stream.finalChatCompletion()
    expect(done.choices[0]?.finish_reason).toBe('tool_calls')
    expect(done.choices[0]?.message.tool_calls).toEqual([
      expect.objectContaining({
        id: 'call_1',
        type: 'function',
        function: expect.objectContaining({ name: 'bash', arguments: '{"command":"ls"}' }),
      }),
    ])
  })
})
