import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import { roundsAnInteger } from '../../src/dialects/roundedByParsing.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// OpenAI's wire carries tool arguments as text, and parsing it rounds an
// integer past 2^53: a model asking to refund orders 9007199254740993 and
// 9007199254740992 in one turn got order …992 refunded once — the wrong
// order for the first call — and both calls read "refunded": the two
// rounded calls shared one key, so the second read the first's result.

const fakes = useFakes()

// Anthropic and Gemini send them as a JSON object in the body: read, it is rounded the same way.
const cases = (['openai', 'anthropic', 'gemini'] as const).flatMap((dialect) =>
  [false, true].map((stream) => ({ dialect, stream })),
)

describe('runTurns: tool arguments holding an integer past 2^53', () => {
  for (const { dialect, stream } of cases) {
    it(`${dialect}, ${stream ? 'streamed' : 'whole'}: the tool is not run on the rounded value; the model reads why`, async () => {
      const fake = await fakes.start({ dialect })
      fake.enqueue(
        reply.text('', {
          toolCalls: [
            {
              id: 'call_1',
              name: 'refund',
              arguments: undefined,
              argumentsJson: '{"order":9007199254740993}',
            },
            {
              id: 'call_2',
              name: 'refund',
              arguments: undefined,
              argumentsJson: '{"order":9007199254740992}',
            },
            {
              id: 'call_3',
              name: 'refund',
              arguments: undefined,
              argumentsJson: '{"order":"9007199254740993"}',
            },
          ],
        }),
      )
      fake.setReply(reply.text('done'))
      const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
      const refunded: unknown[] = []
      const result = await runTurns({
        operationId: `refunds-${dialect}-${stream}`,
        messages: [user('refund both orders')],
        tools: {
          refund: (args) => {
            const order = (args as { order: unknown }).order
            refunded.push(order)
            return `refunded ${order}`
          },
        },
        call: async (messages, { idempotencyKey, signal }) => {
          const request = { messages, maxTokens: 100 }
          if (!stream) return callModel({ models: [model], request, idempotencyKey, signal })
          const answer = callModel({
            models: [model],
            request: { ...request, stream: true },
            idempotencyKey,
            signal,
          })
          return (answer as { result: Promise<ChatResponse> }).result
        },
      })
      // Only the calls whose arguments say what the model wrote ran. OpenAI's
      // come as text: 2^53 written exactly is read exactly, and runs. Anthropic's
      // and Gemini's come parsed: any value past 2^53 may be rounded.
      const fromText = dialect === 'openai'
      expect(refunded).toEqual(
        fromText ? [9007199254740992, '9007199254740993'] : ['9007199254740993'],
      )
      const results = result.messages.find((m) => m.role === 'tool')?.content
      // Gemini sends no call ids: llm makes its own.
      const ids = ((result.messages[1]?.content ?? []) as ChatResponse['content']).flatMap((b) =>
        b.type === 'tool_call' ? [b.id] : [],
      )
      if (dialect !== 'gemini') expect(ids).toEqual(['call_1', 'call_2', 'call_3'])
      expect(results).toEqual([
        {
          type: 'tool_result',
          toolCallId: ids[0],
          content: expect.stringMatching(/integer beyond ±2\^53.*the tool was not run/),
          isError: true,
        },
        fromText
          ? { type: 'tool_result', toolCallId: ids[1], content: 'refunded 9007199254740992' }
          : {
              type: 'tool_result',
              toolCallId: ids[1],
              content: expect.stringMatching(/integer beyond ±2\^53.*the tool was not run/),
              isError: true,
            },
        { type: 'tool_result', toolCallId: ids[2], content: 'refunded 9007199254740993' },
      ])
    })
  }

  it('openai: a number past 2^53 written in exponent form (a magnitude the tool takes as a number) runs; review', async () => {
    const fake = await fakes.start({ dialect: 'openai' })
    fake.enqueue(
      reply.text('', {
        toolCalls: [
          {
            id: 'call_1',
            name: 'size',
            arguments: undefined,
            argumentsJson: '{"bytes":1e20,"note":"id 9007199254740993 in text"}',
          },
        ],
      }),
    )
    fake.setReply(reply.text('done'))
    const model = fakes.adapterFor('openai', fake.baseURL, 'fake-model')
    const seen: unknown[] = []
    await runTurns({
      operationId: 'sizes',
      messages: [user('how big?')],
      tools: {
        size: (args) => {
          seen.push((args as { bytes: unknown }).bytes)
          return 'ok'
        },
      },
      call: (messages, { idempotencyKey, signal }) =>
        callModel({
          models: [model],
          request: { messages, maxTokens: 100 },
          idempotencyKey,
          signal,
        }),
    })
    expect(seen).toEqual([1e20])
  })

  it('a call refused for its rounded arguments does not stop the next turn going to Anthropic or Gemini', async () => {
    const openai = await fakes.start({ dialect: 'openai' })
    openai.enqueue(
      reply.text('', {
        toolCalls: [
          {
            id: 'call_1',
            name: 'refund',
            arguments: undefined,
            argumentsJson: '{"order":9007199254740993}',
          },
        ],
      }),
    )
    const next = await fakes.start({ dialect: 'anthropic' })
    next.setReply(reply.text('done'))
    const first = fakes.adapterFor('openai', openai.baseURL, 'fake-model')
    const second = fakes.adapterFor('anthropic', next.baseURL, 'fake-model')
    const refunded: unknown[] = []
    let turn = 0
    const result = await runTurns({
      operationId: 'refund-then-anthropic',
      messages: [user('refund it')],
      tools: { refund: (args) => refunded.push((args as { order: unknown }).order) },
      call: (messages, { idempotencyKey, signal }) =>
        callModel({
          models: [turn++ === 0 ? first : second],
          request: { messages, maxTokens: 100 },
          idempotencyKey,
          signal,
        }),
    })
    expect(refunded).toEqual([])
    expect(result.response.content).toEqual([{ type: 'text', text: 'done' }])
    // The second turn carried the call as read and the result saying why.
    const sent = JSON.stringify(next.requests[0]?.body)
    expect(sent).toContain('"tool_use"')
    expect(sent).toContain('integer beyond ±2^53')
  })
})

describe('roundsAnInteger', () => {
  it('is true only for an integer literal that parsing changes', () => {
    expect(roundsAnInteger('{"a":9007199254740993}')).toBe(true)
    expect(roundsAnInteger('[1,-9007199254740993]')).toBe(true)
    expect(roundsAnInteger('{"a":123456789012345678901234567890}')).toBe(true)
    expect(roundsAnInteger('{"a":9007199254740992}')).toBe(false)
    expect(roundsAnInteger('{"a":1e20,"b":6.022e23,"c":12345678901234567.5}')).toBe(false)
    expect(roundsAnInteger('{"a":"9007199254740993","b\\":"x\\"9007199254740993"}')).toBe(false)
    expect(roundsAnInteger('{"a":100000000000000000000}')).toBe(false)
    expect(roundsAnInteger('not json')).toBe(false)
  })
})
