import { type RecordedRequest, reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { isOutputTruncated } from '../../src/errors/OutputTruncatedError.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// A tool call an answer stopped at its token limit ends on is cut when what
// came of it does not show its end: an OpenAI-compatible call with no
// argument text at all (read `{}`), Anthropic's last `tool_use` of a
// `max_tokens` answer (its `input` the members finished before the cut).
// Such a call is not run; a call written whole before the cap (`{}` written
// out, Gemini's whole parts) is, whatever the finish.

const fakes = useFakes()

type Dialect = 'openai' | 'anthropic' | 'gemini'

const tools = [
  { name: 'ping', parameters: { type: 'object', properties: {} } },
  { name: 'send_email', parameters: { type: 'object', properties: { to: { type: 'string' } } } },
]

const CUT_RESULT =
  'the answer was cut at its token limit before this call was finished; the tool was not run'

/** The tool results of the run's history (or of the one its error carries). */
function toolResults(messages: ChatMessage[]): string[] {
  return messages
    .filter((m) => m.role === 'tool')
    .flatMap((m) =>
      (m.content as ContentBlock[]).map((b) => (b.type === 'tool_result' ? b.content : '')),
    )
    .map(String)
}

/**
 * Runs `runTurns` against a fake of `dialect` answering with `script`,
 * `call` reaching it through `callModel` (`request` merged in); the tools
 * that ran, the results the model read.
 */
async function runWith(
  dialect: Dialect,
  script: NonNullable<Parameters<typeof fakes.start>[0]>['reply'],
  request: { maxTokens: number; stream?: true },
  recovery?: { maxTokensCeiling?: number; maxRecoveries?: number },
  extra: { honourOutputLimits?: boolean } = {},
) {
  const fake = await fakes.start({ dialect, reply: script, ...extra })
  const model = fakes.adapterFor(dialect, fake.baseURL, 'm')
  const ran: Array<[string, unknown]> = []
  const answers: ChatResponse[] = []
  let messages: ChatMessage[] = []
  let error: unknown
  try {
    const result = await runTurns({
      operationId: `op-${Math.random()}`,
      deadline: false,
      maxTurns: 3,
      messages: [user('Ping, then email Ann.')],
      tools: {
        ping: (args) => {
          ran.push(['ping', args])
          return 'pong'
        },
        send_email: (args) => {
          ran.push(['send_email', args])
          return 'sent'
        },
      },
      call: async (history, { idempotencyKey }) => {
        const options = {
          models: [model],
          request: { messages: history, tools, ...request },
          recovery,
          idempotencyKey,
          limits: { admission: false as const },
        }
        let response: ChatResponse
        try {
          response =
            request.stream === true
              ? await callModel({ ...options, request: { ...options.request, stream: true } })
                  .result
              : await callModel({ ...options, request: { ...options.request, stream: false } })
        } catch (e) {
          // What a caller taking a truncated answer as it is hands on.
          if (!isOutputTruncated(e)) throw e
          response = e.response
        }
        answers.push(response)
        return response
      },
    })
    messages = result.messages
  } catch (e) {
    error = e
    messages = (e as { messages?: ChatMessage[] }).messages ?? []
  }
  return { ran, answers, results: toolResults(messages), error, requests: fake.requests.length }
}

/** First the cut answer (`call` last, finish 'length'); a continuation gets "Done.", a tool result "Noted.". */
function cutThenDone(call: Record<string, unknown>) {
  return (request: RecordedRequest) => {
    const body = JSON.stringify(request.body)
    if (/tool_result|"role":"tool"|functionResponse/.test(body)) return reply.text('Noted.')
    if (body.includes('[Output token limit hit, continue]')) return reply.text('Done.')
    return reply.text('Sending.', { toolCalls: [call as never], finishReason: 'length' })
  }
}

describe('a whole answer cut inside a tool call, through the output-limit recovery', () => {
  it.each([
    ['openai', 'no argument text', { id: 'call_1', name: 'send_email', argumentsJson: '' }],
    ['anthropic', 'input {}', { id: 'call_1', name: 'send_email', arguments: {} }],
    [
      'anthropic',
      'input of the finished members',
      { id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } },
    ],
  ] as const)(
    '%s, %s: the continuation is joined without the cut call, which never runs',
    async (dialect, _what, call) => {
      const { ran, answers } = await runWith(dialect, cutThenDone(call), { maxTokens: 20 })
      // Before: the joined answer kept the cut call and took the
      // continuation's 'stop': send_email ran on {} (or on {to} with no body).
      expect(ran).toEqual([])
      expect(answers[0]?.finishReason).toBe('stop')
      expect(answers[0]?.text).toBe('Sending.Done.')
      expect(answers[0]?.content.filter((b) => b.type === 'tool_call')).toEqual([])
    },
  )
})

describe('a whole answer stopped at its token limit on a tool call, taken as it is', () => {
  it('Anthropic: the last tool_use of a max_tokens answer is cut, whatever its input holds: not run', async () => {
    const { ran, results } = await runWith(
      'anthropic',
      cutThenDone({ id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } }),
      { maxTokens: 20 },
      { maxRecoveries: 0 },
    )
    // Before: send_email ran with { to } and no body (streamed, the same
    // cut is broken JSON and was refused).
    expect(ran).toEqual([])
    expect(results).toEqual([CUT_RESULT])
  })

  it('Gemini: a whole functionCall part without arguments runs (Gemini cuts no part)', async () => {
    const { ran, results } = await runWith(
      'gemini',
      cutThenDone({ id: 'call_1', name: 'ping', arguments: {} }),
      { maxTokens: 20 },
      { maxRecoveries: 0 },
    )
    // Before: refused as cut before its arguments came, on every turn.
    expect(ran).toEqual([['ping', {}]])
    expect(results).toEqual(['pong'])
  })
})

describe('a streamed call without arguments written whole just before the cap', () => {
  // The fake stops at `maxTokens` (2): `ping`'s call, then the cap.
  const pingThenEmail = reply.text('', {
    toolCalls: [
      { id: 'call_0', name: 'ping', arguments: {} },
      { id: 'call_1', name: 'send_email', arguments: { to: 'ann@example.com' } },
    ],
  })

  it.each(['openai', 'gemini'] as const)('%s: it runs', async (dialect) => {
    const { ran, answers } = await runWith(
      dialect,
      pingThenEmail,
      { maxTokens: 2, stream: true },
      undefined,
      { honourOutputLimits: true },
    )
    expect(answers[0]?.finishReason).toBe('length')
    // Before: refused ("cut … before the arguments of this call came") on
    // every turn, until maxTurns.
    expect(ran[0]).toEqual(['ping', {}])
  })

  it('anthropic: the last tool_use of a max_tokens answer is not run, as its whole answer’s is not', async () => {
    const { ran, answers, results } = await runWith(
      'anthropic',
      pingThenEmail,
      { maxTokens: 2, stream: true },
      undefined,
      { honourOutputLimits: true },
    )
    expect(answers[0]?.finishReason).toBe('length')
    expect(ran).toEqual([])
    expect(results[0]).toBe(CUT_RESULT)
  })
})

it('a call whose arguments are blank text (partialContent’s "" of a stream cut before any came) is not run', async () => {
  const ran: unknown[] = []
  const result = await runTurns({
    operationId: `op-${Math.random()}`,
    deadline: false,
    messages: [user('Email Ann.')],
    tools: { send_email: (args) => ran.push(args) },
    call: async (_messages, { turn }) => ({
      id: 'r',
      model: 'm',
      provider: 'stub',
      content:
        turn === 1
          ? [{ type: 'tool_call', id: 'c1', name: 'send_email', arguments: '' }]
          : [{ type: 'text', text: 'Noted.' }],
      text: turn === 1 ? '' : 'Noted.',
      finishReason: turn === 1 ? 'length' : 'stop',
      usage: { inputTokens: 1, outputTokens: 1 },
    }),
  })
  expect(ran).toEqual([])
  expect(toolResults(result.messages)).toEqual([CUT_RESULT])
})
