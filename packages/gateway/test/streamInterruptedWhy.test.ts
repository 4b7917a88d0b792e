import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { anthropicErrors, qwenErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { fallback, startHarness } from './support/harness.js'
import { oneProviderGateway } from './support/oneProviderGateway.js'

/**
 * A stream that breaks after its first token ends with one error event,
 * whose message is what the official SDKs throw (`APIError.message`). It
 * says why, as the same failure before the first token would: an overload,
 * a rate limit and a cut connection read alike otherwise, and the client
 * cannot tell "back off" from "try again now".
 */
describe('a stream broken after its first token says why in its error event', () => {
  const gw = oneProviderGateway()
  afterEach(() => gw.close())

  async function streamError(): Promise<{ text: string; error: unknown }> {
    const stream = await gw.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    })().catch((e: unknown) => e)
    return { text, error }
  }

  it("Anthropic's overloaded_error event mid-stream: the client reads overloaded", async () => {
    const fake = await gw.one('anthropic')
    fake.enqueue(anthropicErrors.overloadedInStream({ afterTokens: 2, text: 'one two three' }))
    const { text, error } = await streamError()
    expect(text).toBe('one two')
    expect(error).toBeInstanceOf(APIError)
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message:
        'the stream from p/model-x broke after the first token: overloaded (overloaded_error); not restarted',
    })
  })

  it("Qwen's throttling event mid-stream: the client reads rate limited", async () => {
    const fake = await gw.one('qwen')
    fake.enqueue(qwenErrors.throttlingInStream({ afterTokens: 2, text: 'one two three' }))
    const { error } = await streamError()
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message:
        'the stream from p/model-x broke after the first token: rate limited (Throttling.RateQuota); not restarted',
    })
  })

  it('a connection cut mid-stream: the client reads network', async () => {
    const fake = await gw.one('openai')
    fake.enqueue(reply.text('one two three', { cutAfterTokens: 2 }))
    const { text, error } = await streamError()
    expect(text).toBe('one two')
    expect(error).toMatchObject({
      code: 'stream_interrupted',
      message: 'the stream from p/model-x broke after the first token: network; not restarted',
    })
  })

  it("DeepSeek's own finish reason for an answer cut after its first token (insufficient_system_resource) is named", async () => {
    // What DeepSeek sends when it runs out of capacity mid-answer: the text
    // so far, then a finish reason of its own (the fakes script OpenAI's only).
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'deepseek-chat', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const deepseek = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => {
        body += c
      })
      req.on('end', () => {
        if ((JSON.parse(body) as { stream?: boolean }).stream === true) {
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.write(chunk({ role: 'assistant', content: 'The answer is' }, null))
          res.end(`${chunk({}, 'insufficient_system_resource')}data: [DONE]\n\n`)
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 1,
            model: 'deepseek-chat',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: 'The answer is' },
                finish_reason: 'insufficient_system_resource',
              },
            ],
            usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
          }),
        )
      })
    })
    await new Promise<void>((resolve) => deepseek.listen(0, '127.0.0.1', resolve))
    const { port } = deepseek.address() as AddressInfo
    const harness = await startHarness({
      providers: {
        ds: { dialect: 'deepseek', baseURL: `http://127.0.0.1:${port}`, apiKeys: ['k'] },
      },
      models: { m: fallback(['ds', 'deepseek-chat']) },
      policy: { maxAttempts: 1 },
    })
    try {
      const ask = { model: 'm', messages: [{ role: 'user' as const, content: 'q' }] }
      const stream = await harness.client.chat.completions.create({ ...ask, stream: true })
      let text = ''
      const error = await (async () => {
        for await (const c of stream) text += c.choices[0]?.delta.content ?? ''
      })().catch((e: unknown) => e)
      expect(text).toBe('The answer is')
      expect(error).toMatchObject({
        code: 'stream_interrupted',
        message:
          'ds/deepseek-chat: the answer ended in an error (finish reason "insufficient_system_resource"); not a complete answer',
      })
    } finally {
      await harness.close()
      await new Promise((resolve) => deepseek.close(resolve))
    }
  })
})
