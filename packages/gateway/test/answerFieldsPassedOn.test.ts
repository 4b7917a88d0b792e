import { type FakeProvider, reply } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { fakeProvider, fallback, type Harness, startHarness } from './support/harness.js'

/**
 * What an OpenAI-compatible upstream answers besides the message, through
 * the gateway to the official `openai` client: `system_fingerprint`,
 * `service_tier`, the message's `annotations` (search models' citations),
 * and parallel streamed tool calls a server gave one id. The upstream's raw
 * replies are scripted with `reply.error(200, …)` (a verbatim body).
 */

const sse = (events: unknown[]) =>
  `${events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('')}`

const chunk = (delta: object, finish: string | null = null) => ({
  id: 'chatcmpl-up',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gpt-4o-search-preview',
  system_fingerprint: 'fp_up',
  service_tier: 'default',
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
})

const CITATIONS = [
  {
    type: 'url_citation',
    url_citation: { url: 'https://example.com/a', title: 'A', start_index: 0, end_index: 5 },
  },
  {
    type: 'url_citation',
    url_citation: { url: 'https://example.com/b', title: 'B', start_index: 6, end_index: 11 },
  },
]

const TOOLS = ['a', 'b'].map((name) => ({
  type: 'function' as const,
  function: { name, parameters: { type: 'object' } },
}))

describe('answer fields an OpenAI client reads, passed on', () => {
  let fake: FakeProvider | undefined
  let harness: Harness | undefined
  afterEach(async () => {
    await harness?.close()
    await fake?.close()
    fake = undefined
    harness = undefined
  })

  async function gateway(): Promise<FakeProvider> {
    const started = await fakeProvider('openai', ['key-1'])
    fake = started.fake
    harness = await startHarness({
      providers: { up: started.entry },
      models: { m: fallback(['up', 'gpt-4o-search-preview']) },
    })
    return started.fake
  }

  it('a whole answer keeps system_fingerprint, service_tier and the citations of web_search_options', async () => {
    const up = await gateway()
    up.enqueue(
      reply.error(200, {
        id: 'chatcmpl-up',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-search-preview',
        system_fingerprint: 'fp_up',
        service_tier: 'default',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'hello world', annotations: CITATIONS },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      }),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'news?' }],
      web_search_options: {},
    })
    expect(up.requests[0]!.body).toMatchObject({ web_search_options: {} })
    expect(completion.system_fingerprint, 'system_fingerprint').toBe('fp_up')
    expect(completion.service_tier, 'service_tier').toBe('default')
    expect(completion.choices[0]!.message.annotations, 'message.annotations').toEqual(CITATIONS)

    // Pushed back as it came, citations and all: taken, and sent to no provider.
    up.enqueue(reply.text('more'))
    const next = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'user', content: 'news?' },
        completion.choices[0]!.message,
        { role: 'user', content: 'more?' },
      ],
    })
    expect(next.choices[0]!.message.content, 'the next turn').toBe('more')
    expect(up.requests[1]!.rawBody).not.toContain('url_citation')
  })

  it("an Anthropic answer's service tier in OpenAI's words: standard is default, priority stays", async () => {
    const started = await fakeProvider('anthropic', ['key-1'])
    fake = started.fake
    harness = await startHarness({
      providers: { up: started.entry },
      models: { m: fallback(['up', 'claude-sonnet-4-5']) },
    })
    for (const [served, said] of [
      ['standard', 'default'],
      ['priority', 'priority'],
    ] as const) {
      started.fake.enqueue(
        reply.error(200, {
          id: `msg_${served}`,
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5',
          content: [{ type: 'text', text: 'hi' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 5, output_tokens: 1, service_tier: served },
        }),
      )
      const completion = await harness.client.chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
      })
      expect(completion.service_tier, served).toBe(said)
    }
  })

  it('a whole answer whose provider reported no usage has no usage (not zeros a client would read as its bill)', async () => {
    const up = await gateway()
    up.enqueue(
      reply.error(200, {
        id: 'chatcmpl-up',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-search-preview',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'hello' },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
      }),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(completion.choices[0]!.message.content).toBe('hello')
    expect(completion.usage, 'usage').toBeUndefined()
  })

  it('a streamed answer keeps them too: the citations as delta.annotations, the fingerprint on the chunks from the finish on', async () => {
    const up = await gateway()
    up.enqueue(
      reply.error(
        200,
        sse([
          chunk({ role: 'assistant', content: '' }),
          chunk({ content: 'hello world' }),
          chunk({ annotations: [CITATIONS[0]] }),
          chunk({ annotations: [CITATIONS[1]] }),
          chunk({}, 'stop'),
          '[DONE]',
        ]),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const stream = harness!.client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'news?' }],
      web_search_options: {},
    })
    const annotations: unknown[] = []
    const fingerprints = new Set<unknown>()
    for await (const part of stream) {
      annotations.push(
        ...((part.choices[0]?.delta as { annotations?: unknown[] })?.annotations ?? []),
      )
      if (part.choices[0]?.finish_reason) fingerprints.add(part.system_fingerprint)
    }
    const final = await stream.finalChatCompletion()
    expect(annotations, 'delta.annotations').toEqual(CITATIONS)
    expect([...fingerprints], 'the finish chunk’s system_fingerprint').toEqual(['fp_up'])
    expect(final.system_fingerprint, 'finalChatCompletion().system_fingerprint').toBe('fp_up')
    expect(final.choices[0]!.message.content).toBe('hello world')
  })

  it('two parallel streamed tool calls a server gave one id stay two calls, each at its own index', async () => {
    const up = await gateway()
    up.enqueue(
      reply.error(
        200,
        sse([
          chunk({ role: 'assistant', content: null }),
          chunk({
            tool_calls: [
              { index: 0, id: 'call_1', type: 'function', function: { name: 'a', arguments: '' } },
            ],
          }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"x":1}' } }] }),
          chunk({
            tool_calls: [
              { index: 1, id: 'call_1', type: 'function', function: { name: 'b', arguments: '' } },
            ],
          }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: '{"y":2}' } }] }),
          chunk({}, 'tool_calls'),
          '[DONE]',
        ]),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const stream = harness!.client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'do both' }],
      tools: TOOLS,
    })
    const final = await stream.finalChatCompletion()
    const calls = final.choices[0]!.message.tool_calls!.map((c) => ({
      name: c.function.name,
      arguments: c.function.arguments,
    }))
    expect(calls, 'the calls the client assembled').toEqual([
      { name: 'a', arguments: '{"x":1}' },
      { name: 'b', arguments: '{"y":2}' },
    ])
  })

  it('the prediction counts of Predicted Outputs reach the client in usage, whole and streamed; an answer without an id gets one', async () => {
    const up = await gateway()
    const usage = {
      prompt_tokens: 50,
      completion_tokens: 40,
      total_tokens: 90,
      completion_tokens_details: {
        reasoning_tokens: 0,
        accepted_prediction_tokens: 30,
        rejected_prediction_tokens: 8,
      },
    }
    const details = { accepted_prediction_tokens: 30, rejected_prediction_tokens: 8 }
    up.enqueue(
      reply.error(200, {
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o',
        choices: [
          { index: 0, message: { role: 'assistant', content: 'code' }, finish_reason: 'stop' },
        ],
        usage,
      }),
      reply.error(
        200,
        sse([
          chunk({ role: 'assistant', content: 'code' }),
          chunk({}, 'stop'),
          { id: 'chatcmpl-up', object: 'chat.completion.chunk', choices: [], usage },
          '[DONE]',
        ]),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const ask = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'edit this' }],
      prediction: { type: 'content' as const, content: 'code' },
    }
    const whole = await harness!.client.chat.completions.create(ask)
    expect(whole.usage?.completion_tokens_details, 'whole usage').toMatchObject(details)
    expect(whole.id, 'the answer’s id').toMatch(/^chatcmpl-./)
    const stream = await harness!.client.chat.completions.create({
      ...ask,
      stream: true,
      stream_options: { include_usage: true },
    })
    let streamed: unknown
    for await (const part of stream) streamed = part.usage ?? streamed
    expect(streamed, 'streamed usage').toMatchObject({ completion_tokens_details: details })
  })

  it("logprobs: true and top_logprobs are forwarded, and the tokens' log probabilities come back whole and streamed", async () => {
    const token = (t: string, logprob: number) => ({
      token: t,
      logprob,
      bytes: [...Buffer.from(t)],
      top_logprobs: [{ token: t, logprob, bytes: [...Buffer.from(t)] }],
    })
    const up = await gateway()
    up.enqueue(
      reply.error(200, {
        id: 'chatcmpl-up',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: 'hi there' },
            logprobs: { content: [token('hi', -0.1), token(' there', -0.4)], refusal: null },
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      }),
    )
    const completion = await harness!.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      logprobs: true,
      top_logprobs: 1,
    })
    expect(up.requests[0]!.body).toMatchObject({ logprobs: true, top_logprobs: 1 })
    expect(completion.choices[0]!.logprobs, 'choices[0].logprobs').toEqual({
      content: [token('hi', -0.1), token(' there', -0.4)],
      refusal: null,
    })

    // Streamed: each upstream chunk carries its tokens'; the client gathers them all.
    const lp = (...tokens: object[]) => ({ content: tokens, refusal: null })
    const withLogprobs = (delta: object, logprobs: object | null, finish: string | null = null) => {
      const c = chunk(delta, finish)
      c.choices[0]!.logprobs = logprobs as null
      return c
    }
    up.enqueue(
      reply.error(
        200,
        sse([
          withLogprobs({ role: 'assistant', content: '' }, null),
          withLogprobs({ content: 'hi' }, lp(token('hi', -0.1))),
          withLogprobs({ content: ' there' }, lp(token(' there', -0.4))),
          withLogprobs({}, null, 'stop'),
          '[DONE]',
        ]),
        { 'content-type': 'text/event-stream' },
      ),
    )
    const stream = harness!.client.chat.completions.stream({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      logprobs: true,
      top_logprobs: 1,
    })
    const streamed: unknown[] = []
    for await (const part of stream) streamed.push(...(part.choices[0]?.logprobs?.content ?? []))
    const final = await stream.finalChatCompletion()
    expect(up.requests[1]!.body).toMatchObject({ logprobs: true, top_logprobs: 1, stream: true })
    expect(streamed, 'the chunks’ logprobs').toEqual([token('hi', -0.1), token(' there', -0.4)])
    expect(final.choices[0]!.logprobs?.content, 'finalChatCompletion()').toEqual([
      token('hi', -0.1),
      token(' there', -0.4),
    ])
    expect(final.choices[0]!.message.content).toBe('hi there')
  })
})
