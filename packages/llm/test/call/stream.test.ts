import diagnostics_channel from 'node:diagnostics_channel'
import { Deadline, ManualClock } from '@hourglass/core'
import { anthropicErrors, qwenErrors, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { anthropic } from '../../src/adapters/anthropic.js'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { callModel } from '../../src/call/callModel.js'
import { isStreamInterrupted } from '../../src/errors/StreamInterruptedError.js'
import type { StreamEvent } from '../../src/types.js'
import { FAST_RETRIES, useFakes, user } from './support/fakes.js'

const fakes = useFakes()
const request = { messages: [user('Tell me a story.')], maxTokens: 256, stream: true as const }

async function drain(
  stream: AsyncIterable<StreamEvent>,
): Promise<{ text: string; error?: unknown }> {
  let text = ''
  try {
    for await (const event of stream) if (event.type === 'text') text += event.text
    return { text }
  } catch (error) {
    return { text, error }
  }
}

/** Resolves once the next response's headers have reached the code awaiting them. */
function headersRead(): Promise<void> {
  return new Promise((resolve) => {
    const onHeaders = () => {
      diagnostics_channel.unsubscribe('undici:request:headers', onHeaders)
      setImmediate(resolve)
    }
    diagnostics_channel.subscribe('undici:request:headers', onHeaders)
  })
}

describe('streams', () => {
  it('stream a whole answer and end with the same answer as `result`, usage included', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('Once upon a time, 从前.'),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const stream = callModel({ models: [model], request })
    const { text } = await drain(stream)
    const result = await stream.result
    expect(text).toBe('Once upon a time, 从前.')
    expect(result.text).toBe(text)
    expect(result.finishReason).toBe('stop')
    expect(result.usage.outputTokens).toBeGreaterThan(0)
  })

  it.each([
    ['openai', 'x-request-id'],
    ['anthropic', 'request-id'],
  ] as const)(
    'a streamed %s answer carries the provider request id (`%s`), as a whole answer does',
    async (dialect, header) => {
      const fake = await fakes.start({
        dialect,
        reply: reply.text('hi', { headers: { [header]: 'req_123' } }),
      })
      const make = dialect === 'openai' ? openAICompatible : anthropic
      const model = fakes.adapter(make({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }))
      const whole = await callModel({ models: [model], request: { ...request, stream: false } })
      const stream = callModel({ models: [model], request })
      await drain(stream)
      expect(whole.providerRequestId).toBe('req_123')
      expect((await stream.result).providerRequestId).toBe('req_123')
    },
  )

  // DeepSeek names its answers by `x-ds-trace-id` and sends no
  // `x-request-id`: read as OpenAI's, every DeepSeek answer had none.
  it("a DeepSeek answer, whole or streamed, carries DeepSeek's own request id (x-ds-trace-id)", async () => {
    const fake = await fakes.start({ dialect: 'deepseek', reply: reply.text('hi') })
    const model = fakes.adapter(
      openAICompatible({
        dialect: 'deepseek',
        baseURL: fake.baseURL,
        apiKey: 'sk',
        model: 'deepseek-chat',
      }),
    )
    const whole = await callModel({ models: [model], request: { ...request, stream: false } })
    const stream = callModel({ models: [model], request })
    await drain(stream)
    expect(whole.providerRequestId).toMatch(/^[0-9a-f]{32}$/)
    expect((await stream.result).providerRequestId).toMatch(/^[0-9a-f]{32}$/)
  })

  // DeepSeek's Anthropic-compatible route (`anthropic({ baseURL:
  // 'https://api.deepseek.com/anthropic' })`) names its answers by
  // `x-ds-trace-id` too, and sends no `request-id`: read as Anthropic's, none.
  it("anthropic() against DeepSeek's Anthropic route carries its x-ds-trace-id, whole or streamed", async () => {
    const fake = await fakes.start({ dialect: 'deepseek', reply: reply.text('hi') })
    const model = fakes.adapter(
      anthropic({ baseURL: `${fake.baseURL}/anthropic`, apiKey: 'sk', model: 'deepseek-chat' }),
    )
    const whole = await callModel({ models: [model], request: { ...request, stream: false } })
    const stream = callModel({ models: [model], request })
    await drain(stream)
    expect(whole.providerRequestId).toMatch(/^[0-9a-f]{32}$/)
    expect((await stream.result).providerRequestId).toMatch(/^[0-9a-f]{32}$/)
  })

  // A proxy in front of DeepSeek (or a host that serves its API) may name
  // the answer by `x-request-id` alone: the deepseek dialect read only
  // `x-ds-trace-id`, and lost it.
  it('the deepseek dialect still reads x-request-id when no x-ds-trace-id came', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('hi', { headers: { 'x-request-id': 'req_proxy' } }),
    })
    const model = fakes.adapter(
      openAICompatible({
        dialect: 'deepseek',
        baseURL: fake.baseURL,
        apiKey: 'sk',
        model: 'deepseek-chat',
      }),
    )
    const whole = await callModel({ models: [model], request: { ...request, stream: false } })
    const stream = callModel({ models: [model], request })
    await drain(stream)
    expect(whole.providerRequestId).toBe('req_proxy')
    expect((await stream.result).providerRequestId).toBe('req_proxy')
  })

  it('a stream cut after the first token is not resent: one request, StreamInterruptedError with the partial text', async () => {
    const fake = await fakes.start({
      dialect: 'anthropic',
      reply: reply.text('The quick brown fox jumps over the lazy dog', { cutAfterTokens: 3 }),
    })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const stream = callModel({
      models: [model],
      request,
      retry: { maxAttempts: 5, delay: FAST_RETRIES },
    })
    const { text, error } = await drain(stream)
    expect(isStreamInterrupted(error)).toBe(true)
    expect(error).toMatchObject({ partialText: 'The quick brown', provider: 'anthropic' })
    expect(text).toBe('The quick brown') // the caller saw exactly what the error carries
    await expect(stream.result).rejects.toBe(error)
    expect(fake.requests).toHaveLength(1)
  })

  it.each(['openai', 'anthropic'] as const)(
    '%s: a tool call cut before its arguments began is no finished call in partialContent (its arguments the text that came, "", not {})',
    async (dialect) => {
      // `ping` takes no arguments and its end came ({}); `send_email` was cut
      // right after its opening: read as {}, the two looked alike, and a
      // caller continuing from partialContent would send an email to nobody.
      const fake = await fakes.start({
        dialect,
        reply: reply.text('Sending.', {
          toolCalls: [
            { id: 'call_0', name: 'ping', arguments: {} },
            { id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } },
          ],
          cutAfterTokens: 4,
        }),
      })
      const make = dialect === 'openai' ? openAICompatible : anthropic
      const model = fakes.adapter(make({ baseURL: fake.baseURL, apiKey: 'sk', model: 'm' }))
      const tools = [
        { name: 'ping', parameters: { type: 'object' } },
        { name: 'send_email', parameters: { type: 'object' } },
      ]
      const stream = callModel({ models: [model], request: { ...request, tools } })
      const read = new Map<string, string>()
      let error: unknown
      try {
        for await (const event of stream)
          if (event.type === 'tool_call')
            read.set(event.id, (read.get(event.id) ?? '') + event.argumentsDelta)
      } catch (e) {
        error = e
      }
      expect(isStreamInterrupted(error)).toBe(true)
      expect(Object.fromEntries(read)).toEqual({ call_0: '{}', call_1: '' })
      const calls = (error as { partialContent: Array<{ type: string }> }).partialContent.filter(
        (block) => block.type === 'tool_call',
      )
      expect(calls).toMatchObject([
        { id: 'call_0', name: 'ping', arguments: {} },
        { id: 'call_1', name: 'send_email', arguments: '' },
      ])
    },
  )

  it('an overload error frame after the first token is an interruption, not a retry', async () => {
    const fake = await fakes.start({
      dialect: 'anthropic',
      reply: anthropicErrors.overloadedInStream({ afterTokens: 2, text: 'Half an answer then' }),
    })
    const model = fakes.adapter(
      anthropic({ baseURL: fake.baseURL, apiKey: 'sk-ant', model: 'claude-opus-4-6' }),
    )
    const stream = callModel({ models: [model], request, retry: { delay: FAST_RETRIES } })
    const { error } = await drain(stream)
    expect(isStreamInterrupted(error)).toBe(true)
    expect((error as { partialText: string }).partialText).toBe('Half an')
    expect((error as Error).cause).toMatchObject({ kind: 'overloaded', status: 200 })
    expect(fake.requests).toHaveLength(1)
  })

  it('an error frame before the first token is retried; the caller sees only the good attempt', async () => {
    const fake = await fakes.start({ dialect: 'qwen' })
    fake.enqueue(qwenErrors.throttlingInStream({ afterTokens: 0 }), reply.text('第二次成功'))
    const model = fakes.adapter(
      openAICompatible({
        baseURL: fake.baseURL,
        apiKey: 'sk',
        model: 'qwen-plus',
        dialect: 'qwen',
      }),
    )
    const stream = callModel({ models: [model], request, retry: { delay: FAST_RETRIES } })
    const { text, error } = await drain(stream)
    expect(error).toBeUndefined()
    expect(text).toBe('第二次成功')
    expect(fake.requests).toHaveLength(2)
  })

  it('`: keep-alive` comments do not count as progress: the first-token timeout still fires, then the fallback answers', async () => {
    const slow = await fakes.start({
      dialect: 'openai',
      reply: reply.hang({ afterHeaders: true, keepAliveEveryMs: 20 }),
    })
    const backupFake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('backup speaking'),
    })
    const primary = fakes.adapter(
      openAICompatible({ baseURL: slow.baseURL, apiKey: 'sk', model: 'gpt-4o', name: 'slow' }),
    )
    const backup = fakes.adapter(
      openAICompatible({
        baseURL: backupFake.baseURL,
        apiKey: 'sk',
        model: 'gpt-4o-mini',
        name: 'backup',
      }),
    )
    const records: Array<{ decision: string; errorKind?: string | undefined }> = []
    // The timer runs on the deadline's manual clock, moved once the 200 and
    // some keep-alives have come: on the wall clock, the backup's own first
    // token would race 300 ms of a loaded machine.
    const clock = new ManualClock()
    using deadline = Deadline.after(600_000, { clock })
    const headers = headersRead()
    const stream = callModel({
      models: [primary, backup],
      request,
      deadline,
      firstTokenTimeoutMs: 300,
      onAttempt: (r) => records.push(r),
      retry: { maxAttempts: 1 },
    })
    await headers
    await new Promise((resolve) => setTimeout(resolve, 100)) // keep-alives every 20 ms
    clock.advance(300)
    const { text, error } = await drain(stream)
    expect(error).toBeUndefined()
    expect(text).toBe('backup speaking')
    expect(records[0]).toMatchObject({ decision: 'fallback', errorKind: 'timeout' })
    expect(slow.requests).toHaveLength(1)
  })

  it('a consumer that stops reading ends the attempt and leaves the provider connection closed', async () => {
    const fake = await fakes.start({
      dialect: 'openai',
      reply: reply.text('one two three four five six seven eight', { tokenDelayMs: 30 }),
    })
    const model = fakes.adapter(
      openAICompatible({ baseURL: fake.baseURL, apiKey: 'sk', model: 'gpt-4o' }),
    )
    const stream = callModel({ models: [model], request })
    for await (const event of stream) {
      if (event.type === 'text') break
    }
    await expect(stream.result).rejects.toMatchObject({ name: 'AbortError' })
    await expect.poll(() => fake.requests[0]?.outcome).toBe('client-closed')
  })
})
