import { ManualClock } from '@hourglass/core'
import { createParser } from 'eventsource-parser'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type FakeProvider, reply, startFakeProvider } from '../../src/providers/index.js'
import { postAnthropicMessages } from '../support/fakeChat.js'
import { dataOf, readSse } from './sse.js'

/**
 * With `honourOutputLimits`, a fake does what a real provider does: it stops writing at the request's token cap (OpenAI
 * `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`, Gemini
 * `MAX_TOKENS`) and at a stop sequence, which it leaves out of the text
 * (OpenAI `stop`, Anthropic `stop_sequence` naming it, Gemini `STOP`),
 * streamed or not, its usage counting only what it wrote. The fakes sent
 * the whole scripted answer whatever the request allowed, so a client's
 * handling of a cut answer was never exercised against them. (Opt-in: tests
 * written before it script answers longer than the caps they send.)
 */
let fake: FakeProvider
beforeAll(async () => {
  // Every route is answered by every fake; one serves the whole file.
  fake = await startFakeProvider({ dialect: 'openai', honourOutputLimits: true })
})
beforeEach(() => fake.reset())
afterAll(() => fake.close())

const ANSWER = 'one two three four five. six'

const post = (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

const openAI = (body: Record<string, unknown>) =>
  post('/v1/chat/completions', {
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hi' }],
    ...body,
  })

const anthropic = (body: Record<string, unknown>) =>
  post(
    '/v1/messages',
    { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'hi' }], ...body },
    { 'anthropic-version': '2023-06-01' },
  )

const gemini = (method: string, generationConfig: Record<string, unknown>) =>
  post(`/v1beta/models/gemini-2.5-flash:${method}`, {
    contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
    generationConfig,
  })

describe('openai-chat: max_tokens, max_completion_tokens and stop', () => {
  it('an answer longer than max_tokens is cut at it: finish_reason length, usage counting what was sent', async () => {
    fake.enqueue(reply.text(ANSWER))
    const body = (await (await openAI({ max_tokens: 3 })).json()) as {
      choices: { message: { content: string }; finish_reason: string }[]
      usage: { completion_tokens: number }
    }
    expect(body.choices[0]).toMatchObject({
      message: { content: 'one two three' },
      finish_reason: 'length',
    })
    expect(body.usage.completion_tokens).toBe(3)
  })

  it('streamed, max_completion_tokens counts the silent reasoning too', async () => {
    fake.enqueue(reply.text(ANSWER, { thinking: 'hm well' }))
    const chunks = dataOf<{
      choices: { delta: { content?: string }; finish_reason: string | null }[]
      usage: {
        completion_tokens: number
        completion_tokens_details: { reasoning_tokens: number }
      } | null
    }>(
      await readSse(
        await openAI({
          model: 'o4-mini',
          max_completion_tokens: 4,
          stream: true,
          stream_options: { include_usage: true },
        }),
      ),
    )
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')
    expect(text).toBe('one two')
    expect(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean)).toEqual(['length'])
    expect(chunks.at(-1)?.usage).toMatchObject({
      completion_tokens: 4,
      completion_tokens_details: { reasoning_tokens: 2 },
    })
  })

  it('a stop sequence ends the text before it, with finish_reason stop, streamed or not', async () => {
    fake.enqueue(reply.text(ANSWER), reply.text(ANSWER))
    const whole = (await (await openAI({ stop: ['.', 'six'] })).json()) as {
      choices: { message: { content: string }; finish_reason: string }[]
      usage: { completion_tokens: number }
    }
    expect(whole.choices[0]).toMatchObject({
      message: { content: 'one two three four five' },
      finish_reason: 'stop',
    })
    // Five tokens sent and the '.' that stopped it: written, billed, not sent.
    expect(whole.usage.completion_tokens).toBe(6)
    const chunks = dataOf<{ choices: { delta: { content?: string } }[] }>(
      await readSse(await openAI({ stop: ' four', stream: true })),
    )
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('one two three')
  })

  it('a cap that runs out before the stop sequence is written is a cap; reached, its tokens are counted', async () => {
    // 'one', ' two', ' STOP', ' rest': the stop is written by the third token.
    fake.enqueue(reply.text('one two STOP rest'), reply.text('one two STOP rest'))
    type Whole = {
      choices: { message: { content: string }; finish_reason: string }[]
      usage: { completion_tokens: number }
    }
    const capped = (await (await openAI({ max_tokens: 2, stop: ' STOP' })).json()) as Whole
    expect(capped.choices[0]).toMatchObject({
      message: { content: 'one two' },
      finish_reason: 'length',
    })
    expect(capped.usage.completion_tokens).toBe(2)
    const stopped = (await (await openAI({ max_tokens: 3, stop: ' STOP' })).json()) as Whole
    expect(stopped.choices[0]).toMatchObject({
      message: { content: 'one two' },
      finish_reason: 'stop',
    })
    expect(stopped.usage.completion_tokens).toBe(3)
  })

  it('a tool call the cap cuts keeps the argument text written, finish_reason length', async () => {
    fake.enqueue(reply.text('', { toolCalls: [{ name: 'get', arguments: { city: 'Paris' } }] }))
    const body = (await (await openAI({ max_tokens: 2 })).json()) as {
      choices: {
        message: { tool_calls: { function: { arguments: string } }[] }
        finish_reason: string
      }[]
    }
    expect(body.choices[0]!.finish_reason).toBe('length')
    const args = body.choices[0]!.message.tool_calls[0]!.function.arguments
    expect('{"city":"Paris"}'.startsWith(args) && args.length < 16).toBe(true)
  })

  it('a script that names its finish reason is sent whole, as written', async () => {
    fake.enqueue(reply.text(ANSWER, { finishReason: 'stop' }))
    const body = (await (await openAI({ max_tokens: 1, stop: '.' })).json()) as {
      choices: { message: { content: string }; finish_reason: string }[]
    }
    expect(body.choices[0]).toMatchObject({ message: { content: ANSWER }, finish_reason: 'stop' })
  })
})

describe('anthropic-messages: max_tokens and stop_sequences', () => {
  it('max_tokens cuts the text: stop_reason max_tokens, output_tokens what was sent', async () => {
    fake.enqueue(reply.text(ANSWER))
    const body = (await (await anthropic({ max_tokens: 2 })).json()) as Record<string, unknown>
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'one two' }],
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: { output_tokens: 2 },
    })
  })

  it('a stop sequence: stop_reason stop_sequence naming it, the text before it, streamed or not', async () => {
    fake.enqueue(reply.text(ANSWER), reply.text(ANSWER))
    const body = (await (
      await anthropic({ max_tokens: 100, stop_sequences: ['five.', 'zzz'] })
    ).json()) as Record<string, unknown>
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'one two three four ' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'five.',
    })
    const events = dataOf<{
      type: string
      delta?: { text?: string; stop_reason?: string; stop_sequence?: string }
    }>(await readSse(await anthropic({ max_tokens: 100, stop_sequences: ['ee'], stream: true })))
    const text = events.map((e) => (e.type === 'content_block_delta' ? e.delta?.text : '')).join('')
    expect(text).toBe('one two thr')
    expect(events.find((e) => e.type === 'message_delta')?.delta).toEqual({
      stop_reason: 'stop_sequence',
      stop_sequence: 'ee',
    })
  })

  it('of two stop sequences, the one whose last token comes first ends the text', async () => {
    // ' four' completes "our"; "four five" would need ' five.', never written.
    fake.enqueue(
      reply.text(ANSWER, { tokens: ['one', ' two', ' three', ' four', ' five.', ' six'] }),
    )
    const body = (await (
      await anthropic({ max_tokens: 100, stop_sequences: ['four five', 'our'] })
    ).json()) as Record<string, unknown>
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'one two three f' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'our',
      usage: { output_tokens: 4 },
    })
  })

  it('max_tokens spent before the stop sequence is written: max_tokens, no stop_sequence', async () => {
    fake.enqueue(reply.text('one two STOP rest'))
    const body = (await (
      await anthropic({ max_tokens: 2, stop_sequences: [' STOP'] })
    ).json()) as Record<string, unknown>
    expect(body).toMatchObject({
      content: [{ type: 'text', text: 'one two' }],
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: { output_tokens: 2 },
    })
  })

  it('a tool call cut by max_tokens: streamed pieces written, unstreamed the block with the input finished', async () => {
    const call = reply.text('Let me look.', { toolCalls: [{ name: 'get', arguments: { q: 'x' } }] })
    const twoArgs = reply.text('', { toolCalls: [{ name: 'get', arguments: { a: 1, b: 'long' } }] })
    fake.enqueue(call, twoArgs, call)
    // Anthropic's own check for a cut call: `stop_reason == "max_tokens"` and
    // the last content block a `tool_use` (docs, "Handling stop reasons").
    const body = (await (await anthropic({ max_tokens: 5 })).json()) as Record<string, unknown>
    expect(body).toMatchObject({
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', name: 'get', input: {} },
      ],
      stop_reason: 'max_tokens',
    })
    expect((body['content'] as unknown[]).length).toBe(2)
    // '{"a":1', ',"b":"' written: the finished `a`, not the `b` begun.
    const partial = (await (await anthropic({ max_tokens: 2 })).json()) as Record<string, unknown>
    expect(partial['content']).toMatchObject([{ type: 'tool_use', input: { a: 1 } }])
    expect((partial['content'] as { input: unknown }[])[0]!.input).toEqual({ a: 1 })
    const events = dataOf<{
      type: string
      delta?: { partial_json?: string; stop_reason?: string }
    }>(await readSse(await anthropic({ max_tokens: 5, stream: true })))
    const json = events.map((e) => e.delta?.partial_json ?? '').join('')
    expect(json).toBe('{"q')
    expect(events.find((e) => e.type === 'message_delta')?.delta?.stop_reason).toBe('max_tokens')
  })
})

describe('gemini: generationConfig.maxOutputTokens and stopSequences', () => {
  it('thoughts that use the cap up leave no text: MAX_TOKENS, as gemini-2.5 answers', async () => {
    fake.enqueue(reply.text(ANSWER, { thinking: 'a b c' }))
    const body = (await (await gemini('generateContent', { maxOutputTokens: 2 })).json()) as {
      candidates: { content: Record<string, unknown>; finishReason: string }[]
      usageMetadata: Record<string, unknown>
    }
    expect(body.candidates[0]).toMatchObject({
      content: { role: 'model' },
      finishReason: 'MAX_TOKENS',
    })
    expect(body.candidates[0]!.content['parts']).toBeUndefined()
    expect(body.usageMetadata['thoughtsTokenCount']).toBe(2)
    // No visible token, no `candidatesTokenCount` (proto3 JSON leaves the
    // zero out, as gemini-2.5's MAX_TOKENS answers do); the fake said 0.
    expect(body.usageMetadata).not.toHaveProperty('candidatesTokenCount')
    fake.enqueue(reply.text(ANSWER, { thinking: 'a b c' }))
    const chunks = dataOf<{ usageMetadata: Record<string, unknown> }>(
      await readSse(await gemini('streamGenerateContent?alt=sse', { maxOutputTokens: 2 })),
    )
    expect(chunks.at(-1)!.usageMetadata).toMatchObject({ thoughtsTokenCount: 2 })
    expect(chunks.at(-1)!.usageMetadata).not.toHaveProperty('candidatesTokenCount')
  })

  it('signed thoughts that use the cap up: the signature alone, on an empty text part, as the docs say', async () => {
    // The docs said "no parts at all" whatever the script; a scripted
    // signature still comes where the fake puts one no sent part carries.
    fake.enqueue(reply.text(ANSWER, { thinking: 'a b c', signature: 'sig' }))
    const body = (await (await gemini('generateContent', { maxOutputTokens: 2 })).json()) as {
      candidates: { content: Record<string, unknown>; finishReason: string }[]
    }
    expect(body.candidates[0]).toMatchObject({
      content: { parts: [{ text: '', thoughtSignature: 'sig' }], role: 'model' },
      finishReason: 'MAX_TOKENS',
    })
  })

  it('streamed: cut at the cap or before a stop sequence, the last chunk naming why', async () => {
    fake.enqueue(reply.text(ANSWER), reply.text(ANSWER))
    type Chunk = {
      candidates: { content: { parts?: { text: string }[] }; finishReason?: string }[]
    }
    const read = async (config: Record<string, unknown>) => {
      const chunks = dataOf<Chunk>(
        await readSse(await gemini('streamGenerateContent?alt=sse', config)),
      )
      return {
        text: chunks
          .flatMap((c) => c.candidates[0]!.content.parts ?? [])
          .map((p) => p.text)
          .join(''),
        finish: chunks.at(-1)!.candidates[0]!.finishReason,
      }
    }
    expect(await read({ maxOutputTokens: 3 })).toEqual({
      text: 'one two three',
      finish: 'MAX_TOKENS',
    })
    expect(await read({ stopSequences: [' three'] })).toEqual({ text: 'one two', finish: 'STOP' })
  })

  it('a JSON-array stream broken while the stop sequence is written is still one JSON array', async () => {
    // Stopped by its first token: nothing sent but that token's time, then the error.
    const error = {
      error: { code: 503, message: 'The model is overloaded.', status: 'UNAVAILABLE' },
    }
    fake.enqueue(reply.text('STOP rest', { streamError: { afterTokens: 1, body: error } }))
    const res = await gemini('streamGenerateContent', { stopSequences: ['STOP'] })
    expect(JSON.parse(await res.text())).toEqual([error])
  })
})

describe('ernie (legacy wenxinworkshop): max_output_tokens and stop', () => {
  it('cut at max_output_tokens: is_truncated, finish_reason length; before a stop: stop', async () => {
    fake.enqueue(reply.text(ANSWER), reply.text(ANSWER))
    const ask = async (body: Record<string, unknown>) =>
      (await (
        await post('/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k', {
          messages: [{ role: 'user', content: 'hi' }],
          ...body,
        })
      ).json()) as Record<string, unknown>
    expect(await ask({ max_output_tokens: 2 })).toMatchObject({
      result: 'one two',
      is_truncated: true,
      finish_reason: 'length',
      usage: { completion_tokens: 2 },
    })
    expect(await ask({ stop: ['.'] })).toMatchObject({
      result: 'one two three four five',
      is_truncated: false,
      finish_reason: 'stop',
    })
  })

  it('streamed: the last chunk says is_truncated when the cap cut the answer, as the unstreamed answer does', async () => {
    // Baidu lists `is_truncated` ("whether the result generated was
    // truncated") among the fields of every answer, streamed or not, and
    // `finish_reason: "length"` as the cut that follows it. The last chunk
    // said `false` whatever the cut: a streaming client that looks for
    // `is_truncated` took a cut answer for a whole one.
    fake.enqueue(reply.text(ANSWER), reply.text(ANSWER))
    type Chunk = { is_end: boolean; is_truncated: boolean; result: string; finish_reason: string }
    const read = async (body: Record<string, unknown>) => {
      const chunks = dataOf<Chunk>(
        await readSse(
          await post('/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k', {
            messages: [{ role: 'user', content: 'hi' }],
            stream: true,
            ...body,
          }),
        ),
      )
      const last = chunks.at(-1)!
      return {
        result: chunks.map((c) => c.result).join(''),
        truncatedBeforeEnd: chunks.slice(0, -1).some((c) => c.is_truncated),
        last: {
          is_end: last.is_end,
          is_truncated: last.is_truncated,
          finish_reason: last.finish_reason,
        },
      }
    }
    expect(await read({ max_output_tokens: 2 })).toEqual({
      result: 'one two',
      truncatedBeforeEnd: false,
      last: { is_end: true, is_truncated: true, finish_reason: 'length' },
    })
    expect(await read({ stop: ['.'] })).toEqual({
      result: 'one two three four five',
      truncatedBeforeEnd: false,
      last: { is_end: true, is_truncated: false, finish_reason: 'stop' },
    })
  })
})

describe('the tokens that write a stop sequence take their time', () => {
  // A model writes the stop sequence token by token before it stops (OpenAI:
  // "The returned text will not contain the stop sequence"; billed, as
  // `completion_tokens` counts it): the finish comes a token's time after
  // the last token sent. The fake billed the stop's token but sent the
  // finish at once, so a stream ended (and a whole answer came) a token
  // early — a deadline test passed against the fake that the provider fails.
  // 'one', ' two', ' STOP', ' rest' with stop ' STOP': two tokens sent, three written.
  const ask = (url: string, stream: boolean) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi' }],
        stop: ' STOP',
        stream,
      }),
    }).then((res) => res.text())

  it("unstreamed: the answer comes after three tokens' time, not two", async () => {
    const clock = new ManualClock()
    await using paced = await startFakeProvider({ clock, honourOutputLimits: true })
    paced.enqueue(reply.text('one two STOP rest', { firstTokenDelayMs: 100, tokenDelayMs: 100 }))
    const answer = ask(paced.url, false)
    await paced.waitForRequests(1)
    await expect.poll(() => clock.pendingTimers).toBe(1)
    clock.advance(299)
    expect(clock.pendingTimers).toBe(1) // still generating the stop's token
    clock.advance(1)
    expect(await answer).toContain('"finish_reason":"stop"')
  })

  it("streamed: the finishing chunk comes a token's time after the last token sent", async () => {
    const clock = new ManualClock()
    await using paced = await startFakeProvider({ clock, honourOutputLimits: true })
    paced.enqueue(reply.text('one two STOP rest', { firstTokenDelayMs: 100, tokenDelayMs: 100 }))
    let done = false
    const answer = ask(paced.url, true).finally(() => {
      done = true
    })
    await paced.waitForRequests(1)
    // One timer a token, as the fake schedules them, until the stream ends.
    let advanced = 0
    for (;;) {
      await expect.poll(() => done || clock.pendingTimers === 1, { interval: 5 }).toBe(true)
      if (done) break
      clock.advance(100)
      advanced += 100
    }
    expect(advanced).toBe(300)
    const text = await answer
    expect(text).toContain('"finish_reason":"stop"')
    expect(text).not.toContain('STOP')
    expect(paced.requests[0]).toMatchObject({ outcome: 'success' })
  })

  // What the client has read at each token's time, step by step as
  // `expected` says (0 ms, then 100 ms a token). Where a wire closes the
  // text before its finish (Anthropic's `content_block_stop`), or carries
  // the last text in its finish (ERNIE's `is_end` chunk did; Gemini's last
  // text chunk carries its STOP), the stop's token went after that frame:
  // the text's end announced a token early, or the last text held back a
  // token's time.
  const stepped = async (dialect: 'anthropic' | 'ernie' | 'gemini', expected: string[][]) => {
    const clock = new ManualClock()
    await using paced = await startFakeProvider({ dialect, clock, honourOutputLimits: true })
    paced.enqueue(reply.text('one two STOP rest', { firstTokenDelayMs: 100, tokenDelayMs: 100 }))
    const res = await (dialect === 'anthropic'
      ? postAnthropicMessages(
          paced.url,
          { stream: true, stop_sequences: [' STOP'] },
          { model: 'claude-sonnet-4-5', maxTokens: 100 },
        )
      : dialect === 'ernie'
        ? fetch(`${paced.url}/rpc/2.0/ai_custom/v1/wenxinworkshop/chat/ernie-4.0-8k`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              messages: [{ role: 'user', content: 'hi' }],
              stream: true,
              stop: [' STOP'],
            }),
          })
        : fetch(`${paced.url}/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ contents: [], generationConfig: { stopSequences: [' STOP'] } }),
          }))
    const read: string[] = []
    const parser = createParser({
      onEvent: (e) => {
        const data = JSON.parse(e.data) as {
          delta?: { text?: string }
          result?: string
          is_end?: boolean
          candidates?: { content: { parts?: { text: string }[] }; finishReason?: string }[]
        }
        if (dialect === 'ernie')
          read.push(data.is_end === true ? `end ${data.result}` : `${data.result}`)
        else if (dialect === 'gemini') {
          const [candidate] = data.candidates ?? []
          const text = candidate?.content.parts?.map((p) => p.text).join('') ?? ''
          read.push(
            candidate?.finishReason === undefined ? text : `${candidate.finishReason} ${text}`,
          )
        } else read.push(data.delta?.text ?? `${e.event}`)
      },
    })
    const decoder = new TextDecoder()
    const body = (async () => {
      for await (const chunk of res.body!) parser.feed(decoder.decode(chunk, { stream: true }))
    })()
    const arrived: string[][] = []
    for (const i of expected.keys()) {
      if (i > 0) {
        await expect.poll(() => clock.pendingTimers, { interval: 5 }).toBe(1)
        clock.advance(100)
      }
      // Each step's frames are written before the next token's timer.
      const want = expected.slice(0, i + 1).flat().length
      await expect.poll(() => read.length, { interval: 5 }).toBeGreaterThanOrEqual(want)
      arrived.push(read.slice(arrived.flat().length))
    }
    await body
    return arrived
  }

  it("anthropic: the text block closes a token's time after the last text, with the stop's token", async () => {
    const timeline = [
      ['message_start', 'content_block_start', 'ping'],
      ['one'], // 100 ms
      [' two'], // 200 ms
      // 300 ms: ' STOP' generated (not sent); only then is the text over.
      ['content_block_stop', 'message_delta', 'message_stop'],
    ]
    expect(await stepped('anthropic', timeline)).toEqual(timeline)
  })

  it("ernie: the last text arrives on time, the is_end chunk (result '') a token's time after it", async () => {
    const timeline = [[], ['one'], [' two'], ['end ']]
    expect(await stepped('ernie', timeline)).toEqual(timeline)
  })

  // A Gemini text answer that stops ends on its last text — but a stop
  // sequence's tokens come after the last text sent: ` two` went out with
  // the STOP, a token's time late.
  it("gemini: the last text arrives on time, the STOP chunk (no parts) a token's time after it", async () => {
    const timeline = [[], ['one'], [' two'], ['STOP ']]
    expect(await stepped('gemini', timeline)).toEqual(timeline)
  })
})

describe('honourOutputLimits', () => {
  it('off by default: the scripted answer is sent whole whatever the request allows', async () => {
    await using plain = await startFakeProvider({ reply: reply.text(ANSWER) })
    const res = await fetch(`${plain.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 1,
        stop: '.',
      }),
    })
    const body = (await res.json()) as {
      choices: { message: { content: string }; finish_reason: string }[]
    }
    expect(body.choices[0]).toMatchObject({ message: { content: ANSWER }, finish_reason: 'stop' })
  })

  it('anything but a boolean is refused, a TypeError naming it', async () => {
    await expect(
      startFakeProvider({ honourOutputLimits: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/honourOutputLimits must be a boolean/)
  })
})
