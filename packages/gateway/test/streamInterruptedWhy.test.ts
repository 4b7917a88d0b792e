import { anthropicErrors, qwenErrors, reply } from '@hourglass/testkit'
import { APIError } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
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
})

/**
 * A provider's output filter that stops an answer after its first token
 * (Anthropic's `event: error` "Output blocked by content filtering policy",
 * DashScope's `data_inspection_failed`) refused the output: not an outage.
 * It ends as Azure OpenAI ends a filtered stream, and as Anthropic's own
 * `stop_reason: "refusal"` already did here: `finish_reason:
 * "content_filter"`, then `[DONE]`, and the official client's iteration
 * ends normally. As a `stream_interrupted` `server_error` event it threw an
 * `APIError` mid-iteration, which alerts and retry logic read as the
 * gateway failing.
 */
describe("a provider's output filter mid-stream ends the stream as content_filter", () => {
  const gw = oneProviderGateway()
  afterEach(() => gw.close())

  async function streamed(): Promise<{ text: string; finish: string | null }> {
    const stream = await gw.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'the lyrics, please' }],
      stream: true,
    })
    let text = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    return { text, finish }
  }

  it("Anthropic's 'Output blocked by content filtering policy' after two tokens", async () => {
    const fake = await gw.one('anthropic')
    fake.enqueue(anthropicErrors.outputBlockedInStream({ afterTokens: 2, text: 'Verse one goes' }))
    expect(await streamed()).toEqual({ text: 'Verse one', finish: 'content_filter' })
    // Not asked again: the same request is filtered again.
    expect(fake.requests).toHaveLength(1)
  })

  it('not once a tool call had begun: the client gets the error event, not a call to run without its arguments', async () => {
    const fake = await gw.one('anthropic')
    fake.enqueue(
      reply.text('Sending.', {
        toolCalls: [{ id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } }],
        streamError: { ...anthropicErrors.outputBlockedInStream().streamError!, afterTokens: 2 },
      }),
    )
    const stream = await gw.harness.client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'Email Ann.' }],
      tools: [
        { type: 'function', function: { name: 'send_email', parameters: { type: 'object' } } },
      ],
      stream: true,
    })
    const finishes: unknown[] = []
    const named: unknown[] = []
    const error = await (async () => {
      for await (const chunk of stream) {
        const choice = chunk.choices[0]
        if (choice?.finish_reason) finishes.push(choice.finish_reason)
        for (const call of choice?.delta.tool_calls ?? []) named.push(call.function?.name)
      }
    })().catch((e: unknown) => e)
    // The call had begun on the wire; no finish told the client to run it.
    expect(named).toContain('send_email')
    expect(finishes).toEqual([])
    expect(error).toBeInstanceOf(APIError)
    expect((error as APIError).message).toMatch(/Output blocked by content filtering policy/)
  })

  it("DashScope's data_inspection_failed event after two tokens, on the wire", async () => {
    await outputFilteredAfterTwoTokens()
    const res = await fetch(`${gw.harness.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      }),
    })
    expect(res.status).toBe(200)
    const events = (await res.text()).split('\n\n').filter((e) => e !== '')
    expect(events.at(-1)).toBe('data: [DONE]')
    const last = JSON.parse(events.at(-2)!.slice('data: '.length))
    expect(last.choices).toMatchObject([{ delta: {}, finish_reason: 'content_filter' }])
    expect(events.some((e) => e.includes('"error"'))).toBe(false)
  })

  // A stream's log probabilities go out once, on its finish chunk (README,
  // "Log probabilities"): the content_filter one carries those of the text
  // that came, as the provider sent them on each chunk before its refusal.
  it("DashScope's data_inspection_failed after two tokens: their logprobs on the finish", async () => {
    await outputFilteredAfterTwoTokens()
    const final = await gw.harness.client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }], logprobs: true })
      .finalChatCompletion()
    const choice = final.choices[0]!
    expect(choice.message.content).toBe('one two')
    expect(choice.finish_reason).toBe('content_filter')
    expect(choice.logprobs?.content?.map((t) => t.token)).toEqual(['one', ' two'])
  })

  /** A qwen provider whose output inspection refuses the stream after "one two". */
  async function outputFilteredAfterTwoTokens(): Promise<void> {
    const fake = await gw.one('qwen')
    const refused = qwenErrors.compatibleDataInspectionFailed().body as { error: object }
    fake.enqueue({
      kind: 'text',
      text: 'one two three',
      streamError: {
        afterTokens: 2,
        // What DashScope's output inspection says mid-stream (its input one says "Input data").
        body: {
          ...refused,
          error: { ...refused.error, message: 'Output data may contain inappropriate content.' },
        },
        status: 400,
      },
    })
  }
})
