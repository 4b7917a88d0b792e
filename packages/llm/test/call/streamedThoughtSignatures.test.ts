import { faultServer, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { gemini } from '../../src/adapters/gemini.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../../src/types.js'
import { useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

/** The same answer, whole and streamed: content compared without the ids made for id-less calls. */
const withoutIds = (content: ContentBlock[]) =>
  content.map((b) => (b.type === 'tool_call' ? { ...b, id: '' } : b))

async function both(model: ReturnType<typeof gemini>): Promise<[ChatResponse, ChatResponse]> {
  const ask = { messages: [user('Weather in Paris?')], maxTokens: 64 }
  const whole = await callModel({ models: [model], request: ask, limits: { admission: false } })
  const stream = callModel({
    models: [model],
    request: { ...ask, stream: true },
    limits: { admission: false },
  })
  for await (const _ of stream) {
    // drained
  }
  return [whole, await stream.result]
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

describe('Gemini thought signatures in a streamed answer', () => {
  it('a signature on the answer part, with no thought before it, is kept and sent back on the part it came on, whole or streamed', async () => {
    const fake = await fakes.start({ dialect: 'gemini' })
    fake.enqueue(
      reply.text('Sunny.', { signature: 'SIG-1' }),
      reply.text('Sunny.', { signature: 'SIG-1' }),
    )
    const model = fakes.adapter(
      gemini({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gemini-2.5-flash' }),
    )
    const [whole, streamed] = await both(model)
    const signedBy = 'gemini-2.5-flash@gemini'
    expect(whole.content).toEqual([
      { type: 'thinking', thinking: '', signature: 'SIG-1', signedBy },
      { type: 'text', text: 'Sunny.' },
    ])
    // Streamed, Gemini signs the answer's last chunk ("." here, as the fake
    // cuts it): the signature is kept in front of that part. Before:
    // [{ type: 'text', text: 'Sunny.' }], the signature dropped.
    expect(streamed.content).toEqual([
      { type: 'text', text: 'Sunny' },
      { type: 'thinking', thinking: '', signature: 'SIG-1', signedBy },
      { type: 'text', text: '.' },
    ])
    const sent = () => fake.requests.at(-1)?.body
    expect(await replayed(model, whole, sent)).toEqual({
      role: 'model',
      parts: [{ text: 'Sunny.', thoughtSignature: 'SIG-1' }],
    })
    expect(await replayed(model, streamed, sent)).toEqual({
      role: 'model',
      parts: [{ text: 'Sunny' }, { text: '.', thoughtSignature: 'SIG-1' }],
    })
  })

  it('a signature on a function call after text goes back on that call, not on the text after an earlier thought', async () => {
    const parts = [
      { text: 'Checking the forecast.', thought: true },
      { text: 'Let me look.' },
      { functionCall: { name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'SIG-2' },
    ]
    const usageMetadata = { promptTokenCount: 5, candidatesTokenCount: 7, totalTokenCount: 12 }
    const answer = (chunk: unknown[], finish: boolean) => ({
      candidates: [
        {
          content: { role: 'model', parts: chunk },
          index: 0,
          ...(finish ? { finishReason: 'STOP' } : {}),
        },
      ],
      usageMetadata,
      responseId: 'r1',
    })
    const sse = parts
      .map((part, i) => `data: ${JSON.stringify(answer([part], i === parts.length - 1))}\r\n\r\n`)
      .join('')
    let last: unknown
    const server = await faultServer((request, i) => {
      if (i === 2) {
        return {
          type: 'respond',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(answer([{ text: 'ok' }], true)),
        }
      }
      return request.url?.includes('alt=sse')
        ? { type: 'respond', headers: { 'content-type': 'text/event-stream' }, body: sse }
        : {
            type: 'respond',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(answer(parts, true)),
          }
    })
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
      gemini({ baseURL: `${server.url}/v1beta`, apiKey: 'sk', model: 'gemini-2.5-pro' }),
    )
    const [whole, streamed] = await both(model)
    // Before: the signature joined the thought ("Checking the forecast."), two parts earlier.
    expect(withoutIds(streamed.content)).toEqual(withoutIds(whole.content))
    const turn = await replayed(model, streamed, () => last)
    expect(turn?.parts).toEqual([
      { text: 'Let me look.' },
      {
        functionCall: { id: expect.any(String), name: 'weather', args: { city: 'Paris' } },
        thoughtSignature: 'SIG-2',
      },
    ])
  })
})
