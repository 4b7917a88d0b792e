import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

// Gemini signs parts, not deltas: a thought can carry its own signature
// (2.5 with thought summaries on; Code Assist sends it in an empty thought
// part after the thought's text), and the function call after it another.
// Streamed, the call's signature was appended to the thought's (`SIG-THOUGHTSIG-CALL`):
// the call went back with a signature Gemini never issued, and without its own.

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const usageMetadata = { promptTokenCount: 5, candidatesTokenCount: 7, totalTokenCount: 12 }
const answer = (parts: unknown[], finish: boolean) => ({
  candidates: [
    {
      content: { role: 'model', parts },
      index: 0,
      ...(finish ? { finishReason: 'STOP' } : {}),
    },
  ],
  usageMetadata,
  responseId: 'r1',
})

/** A server answering `parts` whole, or streamed one part per chunk; `sent()` is the last request body. */
async function serving(parts: unknown[]) {
  const sse = parts
    .map((part, i) => `data: ${JSON.stringify(answer([part], i === parts.length - 1))}\r\n\r\n`)
    .join('')
  let last: unknown
  const server = await faultServer((request) =>
    request.url?.includes('alt=sse')
      ? { type: 'respond', headers: { 'content-type': 'text/event-stream' }, body: sse }
      : {
          type: 'respond',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(answer(parts, true)),
        },
  )
  servers.push(server)
  server.server.on('request', (req) => {
    let text = ''
    req.on('data', (c: Buffer) => {
      text += c
    })
    req.on('end', () => {
      last = JSON.parse(text)
    })
  })
  const model = fakes.adapter(
    gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-3-pro-preview' }),
  )
  return { model, sent: () => last }
}

const ask = { messages: [user('Weather in Paris?')], maxTokens: 64 }

async function streamed(model: ReturnType<typeof gemini>): Promise<ChatResponse> {
  const stream = callModel({
    models: [model],
    request: { ...ask, stream: true },
    limits: { admission: false },
  })
  for await (const _ of stream) {
    // drained
  }
  return stream.result
}

/** The model turn a replay of `answer` sends to Gemini. */
async function replayed(
  model: ReturnType<typeof gemini>,
  answer: ChatResponse,
  sent: () => unknown,
) {
  const history: ChatMessage[] = [
    user('Weather in Paris?'),
    { role: 'assistant', content: answer.content },
    user('And tomorrow?'),
  ]
  await callModel({
    models: [model],
    request: { messages: history, maxTokens: 64 },
    limits: { admission: false },
  })
  return (sent() as { contents: Array<{ role: string; parts: unknown[] }> }).contents[1]
}

const call = { functionCall: { name: 'weather', args: { city: 'Paris' } } }
const withoutIds = (content: ChatResponse['content']) =>
  content.map((b) => (b.type === 'tool_call' ? { ...b, id: '' } : b))

describe('a Gemini signature after a signed thought, streamed', () => {
  it('a thought that carries its own signature, then a signed function call', async () => {
    const { model, sent } = await serving([
      { text: 'Checking the forecast.', thought: true, thoughtSignature: 'SIG-THOUGHT' },
      { ...call, thoughtSignature: 'SIG-CALL' },
    ])
    const whole = await callModel({ models: [model], request: ask, limits: { admission: false } })
    const answer = await streamed(model)
    // Before: one thinking block signed `SIG-THOUGHTSIG-CALL`.
    expect(withoutIds(answer.content)).toEqual(withoutIds(whole.content))
    const turn = await replayed(model, answer, sent)
    expect(turn?.parts).toEqual([
      {
        functionCall: { id: expect.any(String), name: 'weather', args: { city: 'Paris' } },
        thoughtSignature: 'SIG-CALL',
      },
    ])
  })

  it('a thought signed by an empty thought part after it, then a signed function call', async () => {
    const { model, sent } = await serving([
      { text: 'Checking the forecast.', thought: true },
      { text: '', thought: true, thoughtSignature: 'SIG-THOUGHT' },
      { ...call, thoughtSignature: 'SIG-CALL' },
    ])
    const answer = await streamed(model)
    const signatures = answer.content.flatMap((b) =>
      b.type === 'thinking' && b.signature !== undefined ? [b.signature] : [],
    )
    expect(signatures).toEqual(['SIG-THOUGHT', 'SIG-CALL'])
    const turn = await replayed(model, answer, sent)
    expect(turn?.parts).toEqual([
      {
        functionCall: { id: expect.any(String), name: 'weather', args: { city: 'Paris' } },
        thoughtSignature: 'SIG-CALL',
      },
    ])
  })
})
