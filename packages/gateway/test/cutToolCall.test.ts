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

  it.each([false, true])(
    'llm’s runTurns through the gateway (stream %s) does not run the cut call',
    async (stream) => {
      const fake = gw.fake('openai')
      fake.enqueue(cutOpenAI())
      fake.enqueue(reply.text('Noted.'))
      const model = openAICompatible({
        baseURL: gw.client.baseURL,
        apiKey: 'x',
        model: 'm-openai',
      })
      const ran: unknown[] = []
      await runTurns({
        operationId: `gateway-cut-${stream}`,
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
