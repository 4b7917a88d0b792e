import { faultServer } from '@hourglass/testkit'
import { afterEach, describe, expect, it } from 'vitest'
import { openAICompatible } from '../../src/adapters/openAICompatible.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { useFakes, user } from '../call/support/fakes.js'

const fakes = useFakes()
const servers: Array<{ close(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const chunk = (choice: unknown, usage?: unknown) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', choices: choice === undefined ? [] : [choice], ...(usage ? { usage } : {}) })}\n\n`

/** Turn 1: two calls, the second cut at maxTokens mid-arguments. Turn 2: a plain answer. */
const turns = [
  chunk({
    index: 0,
    delta: {
      role: 'assistant',
      tool_calls: [
        {
          index: 0,
          id: 'call_1',
          type: 'function',
          function: { name: 'lookup', arguments: '{"who":"boss"}' },
        },
      ],
    },
  }) +
    chunk({
      index: 0,
      delta: {
        tool_calls: [
          {
            index: 1,
            id: 'call_2',
            type: 'function',
            function: { name: 'send_email', arguments: '' },
          },
        ],
      },
    }) +
    chunk({
      index: 0,
      delta: {
        tool_calls: [
          { index: 1, function: { arguments: '{"to":"boss@example.com","body":"I qu' } },
        ],
      },
    }) +
    chunk({ index: 0, delta: {}, finish_reason: 'length' }) +
    chunk(undefined, { prompt_tokens: 10, completion_tokens: 20 }) +
    'data: [DONE]\n\n',
  chunk({ index: 0, delta: { content: 'Noted.' }, finish_reason: 'stop' }) +
    chunk(undefined, { prompt_tokens: 30, completion_tokens: 2 }) +
    'data: [DONE]\n\n',
]

/** The second call of `turns[0]` cut right after its name: no argument text came before the cap. */
const cutAfterName =
  (turns[0] as string).split('data: ').slice(0, 3).join('data: ') +
  chunk({ index: 0, delta: {}, finish_reason: 'length' }) +
  chunk(undefined, { prompt_tokens: 10, completion_tokens: 20 }) +
  'data: [DONE]\n\n'

/** Runs the two turns (`first`, then `turns[1]`): the tools that ran, the results the model read. */
async function runOn(first: string) {
  const bodies: unknown[] = []
  const server = await faultServer((_request, i) => ({
    type: 'respond',
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    body: i === 0 ? first : (turns[1] as string),
  }))
  servers.push(server)
  server.server.on('request', (req) => {
    let text = ''
    req.on('data', (c: Buffer) => {
      text += c
    })
    req.on('end', () => bodies.push(JSON.parse(text)))
  })
  const model = fakes.adapter(
    openAICompatible({ baseURL: `${server.url}/v1`, apiKey: 'sk', model: 'm' }),
  )
  const ran: Array<[string, unknown]> = []
  const result = await runTurns({
    operationId: `op-${Math.random()}`,
    messages: [user('Tell the boss.')],
    tools: {
      lookup: (args) => {
        ran.push(['lookup', args])
        return 'found'
      },
      send_email: (args) => {
        ran.push(['send_email', args])
        return 'sent'
      },
    },
    call: (messages, { idempotencyKey }) =>
      callModel({
        models: [model],
        request: { messages, maxTokens: 20, stream: true },
        idempotencyKey,
        limits: { admission: false },
      }).result,
  })
  const second = bodies[1] as {
    messages: Array<{ role: string; tool_call_id?: string; content: string }>
  }
  return { ran, result, results: second.messages.filter((m) => m.role === 'tool') }
}

describe('runTurns and a tool call the model never finished', () => {
  it('a call whose arguments are not JSON (cut at maxTokens) is not run: the model reads why', async () => {
    const { ran, result, results } = await runOn(turns[0] as string)
    // Before: send_email ran with the fragment '{"to":"boss@example.com","body":"I qu'.
    expect(ran).toEqual([['lookup', { who: 'boss' }]])
    expect(result.response.text).toBe('Noted.')
    expect(results.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2'])
    expect(results[0]?.content).toBe('found')
    expect(results[1]?.content).toMatch(
      /^the arguments of this call are not valid JSON \(.+\); the tool was not run$/,
    )
  })

  it('a call cut at maxTokens before any of its arguments came is not run either: it is no call without arguments', async () => {
    const { ran, result, results } = await runOn(cutAfterName)
    // Before: send_email ran with {} — the `{}` a call without arguments
    // reads once its end comes — an email to nobody the model never wrote.
    expect(ran).toEqual([['lookup', { who: 'boss' }]])
    expect(result.response.text).toBe('Noted.')
    expect(results.map((m) => m.tool_call_id)).toEqual(['call_1', 'call_2'])
    expect(results[1]?.content).toBe(
      'the answer was cut at its token limit before this call was finished; the tool was not run',
    )
  })
})
