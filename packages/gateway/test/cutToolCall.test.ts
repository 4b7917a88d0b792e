import { callModel, isOutputTruncated, openAICompatible, runTurns } from '@hourglass/llm'
import { type ProviderDialect, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { dialectGateway } from './support/dialectGateway.js'

// An answer stopped at its token limit in a tool call (finish `length`):
// an OpenAI-compatible upstream's call cut right after its name (no argument
// text), Anthropic's last `tool_use` of a `max_tokens` answer. llm marks it
// unfinished; the gateway answered it `"arguments": "{}"` (the parser's
// `{}`, or Anthropic's `{ to }` with no body) — whole and streamed — and a
// client (llm's runTurns through the gateway) ran send_email on it. It is
// answered as the model sent it: "" whole; streamed, the `{}` is not sent.

const gw = dialectGateway(['openai', 'anthropic'])

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'send_email',
      parameters: { type: 'object', properties: { to: { type: 'string' } } },
    },
  },
]
const messages = [{ role: 'user' as const, content: 'Email Ann.' }]

const cutOpenAI = () =>
  reply.text('Sending.', {
    toolCalls: [{ id: 'call_1', name: 'send_email', arguments: {}, argumentsJson: '' }],
    finishReason: 'length',
  })
const cutAnthropic = () =>
  reply.text('Sending.', {
    toolCalls: [{ id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } }],
    finishReason: 'length',
  })
// Cut inside its first parameter: Anthropic streams a tool's input a member
// at a time, so no `partial_json` text came before `max_tokens`.
const cutAnthropicEmpty = () =>
  reply.text('Sending.', {
    toolCalls: [{ id: 'call_1', name: 'send_email', arguments: {} }],
    finishReason: 'length',
  })

async function whole(dialect: ProviderDialect) {
  const done = await gw.client.chat.completions.create({
    model: `m-${dialect}`,
    messages,
    tools,
    max_tokens: 20,
  })
  return { finish: done.choices[0]?.finish_reason, calls: done.choices[0]?.message.tool_calls }
}

async function streamed(dialect: ProviderDialect) {
  const stream = gw.client.chat.completions.stream({
    model: `m-${dialect}`,
    messages,
    tools,
    max_tokens: 20,
  })
  const done = await stream.finalChatCompletion()
  return { finish: done.choices[0]?.finish_reason, calls: done.choices[0]?.message.tool_calls }
}

const call = (args: string) =>
  expect.objectContaining({
    id: 'call_1',
    function: expect.objectContaining({ name: 'send_email', arguments: args }),
  })

describe('a tool call the upstream cut at its token limit, through the gateway', () => {
  it('OpenAI-compatible upstream, no argument text: "" whole and streamed (was "{}")', async () => {
    gw.fake('openai').enqueue(cutOpenAI())
    expect(await whole('openai')).toEqual({ finish: 'length', calls: [call('')] })
    gw.fake('openai').enqueue(cutOpenAI())
    expect(await streamed('openai')).toEqual({ finish: 'length', calls: [call('')] })
  })

  it('a call without argument text that the answer did not end in is sent "{}" still, streamed', async () => {
    // A tool without parameters, called whole (finish tool_calls): its
    // arguments parse, as the official SDK's helpers parse them.
    gw.fake('openai').enqueue(
      reply.text('', {
        toolCalls: [{ id: 'call_1', name: 'send_email', arguments: {}, argumentsJson: '' }],
      }),
    )
    expect(await streamed('openai')).toEqual({ finish: 'tool_calls', calls: [call('{}')] })
  })

  it('Anthropic upstream, the last tool_use of a max_tokens answer, whole: "" (was its { to })', async () => {
    gw.fake('anthropic').enqueue(cutAnthropic())
    expect(await whole('anthropic')).toEqual({ finish: 'length', calls: [call('')] })
  })

  it('Anthropic upstream, the last tool_use of a max_tokens answer with no input: "" whole and streamed (streamed was "{}")', async () => {
    gw.fake('anthropic').enqueue(cutAnthropicEmpty())
    expect(await whole('anthropic')).toEqual({ finish: 'length', calls: [call('')] })
    gw.fake('anthropic').enqueue(cutAnthropicEmpty())
    expect(await streamed('anthropic')).toEqual({ finish: 'length', calls: [call('')] })
  })

  it.each(['anthropic'] as const)(
    '%s upstream: a call without arguments followed by another reaches .stream() as "{}" when the next begins',
    async (dialect) => {
      // The SDK takes call 0 as done when call 1's first chunk comes: the
      // `{}` Anthropic's parser closed call 0 with has to be out before call
      // 1, not held until the finish (the done event read ""). An OpenAI
      // upstream's call with no argument text gets its `{}` only with the
      // finish (an upstream may open every call before sending any
      // arguments): the SDK's helper with strict tools throws on it, as it
      // did before (README, Streaming). Anthropic has no strict tools.
      const strict = false
      const tool = (name: string, properties: Record<string, unknown>) => ({
        type: 'function' as const,
        function: {
          name,
          ...(strict ? { strict } : {}),
          parameters: {
            type: 'object',
            properties,
            additionalProperties: false,
            required: Object.keys(properties),
          },
        },
      })
      gw.fake(dialect).enqueue(
        reply.text('', {
          toolCalls: [
            { id: 'call_0', name: 'ping', arguments: {}, argumentsJson: '' },
            { id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } },
          ],
        }),
      )
      const stream = gw.client.chat.completions.stream({
        model: `m-${dialect}`,
        messages,
        tools: [tool('ping', {}), tool('send_email', { to: { type: 'string' } })],
      })
      const done: unknown[] = []
      stream.on('tool_calls.function.arguments.done', (e) =>
        done.push([e.name, e.index, e.arguments, e.parsed_arguments]),
      )
      const final = await stream.finalChatCompletion()
      const to = '{"to":"ann@example.com"}'
      expect(done).toEqual([
        ['ping', 0, '{}', strict ? {} : null],
        ['send_email', 1, to, strict ? { to: 'ann@example.com' } : null],
      ])
      expect(final.choices[0]?.finish_reason).toBe('tool_calls')
      expect(final.choices[0]?.message.tool_calls?.map((c) => c.function.arguments)).toEqual([
        '{}',
        to,
      ])
    },
  )

  it('two calls without argument text, finish length: only the last is cut, the first streams "{}"', async () => {
    gw.fake('openai').enqueue(
      reply.text('', {
        toolCalls: [
          { id: 'call_0', name: 'send_email', arguments: {}, argumentsJson: '' },
          { id: 'call_1', name: 'send_email', arguments: {}, argumentsJson: '' },
        ],
        finishReason: 'length',
      }),
    )
    const { finish, calls } = await streamed('openai')
    expect(finish).toBe('length')
    expect(calls?.map((c) => c.function.arguments)).toEqual(['{}', ''])
  })

  it.each([
    ['openai', false],
    ['openai', true],
    ['anthropic', false],
    ['anthropic', true],
  ] as const)(
    'llm’s runTurns through the gateway to %s (stream %s) does not run the cut call',
    async (dialect, stream) => {
      const fake = gw.fake(dialect)
      fake.enqueue(dialect === 'openai' ? cutOpenAI() : cutAnthropicEmpty())
      fake.enqueue(reply.text('Noted.'))
      const model = openAICompatible({
        baseURL: gw.client.baseURL,
        apiKey: 'x',
        model: `m-${dialect}`,
      })
      const ran: unknown[] = []
      await runTurns({
        operationId: `gateway-cut-${dialect}-${stream}`,
        deadline: false,
        messages,
        tools: {
          send_email: (args) => {
            ran.push(args)
            return 'sent'
          },
        },
        call: async (history, { idempotencyKey }) => {
          const request = {
            messages: history,
            maxTokens: 20,
            tools: [{ name: 'send_email', parameters: { type: 'object' } }],
          }
          const options = {
            models: [model],
            recovery: { maxRecoveries: 0 },
            idempotencyKey,
            limits: { admission: false as const },
          }
          try {
            return stream
              ? await callModel({ ...options, request: { ...request, stream: true } }).result
              : await callModel({ ...options, request: { ...request, stream: false } })
          } catch (e) {
            if (isOutputTruncated(e)) return e.response
            throw e
          }
        },
      })
      // Before: [{}] — send_email ran on arguments the model never wrote.
      expect(ran).toEqual([])
    },
  )
})
