import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// A model wrote {"t":1e999}: read, it is Infinity. The tool ran on t =
// Infinity, and the next turn, which writes the call again, was refused
// (InvalidChatRequestError at its arguments' t) on Anthropic's and Gemini's
// wire: the side effect done, the run dead.

const fakes = useFakes()

// Not Gemini's stream: it hands the call on as `JSON.stringify(args)`, so
// the tool gets t = null, with no Infinity left to see (dialects/gemini:
// the text is kept only where reading rounded an integer).
const cases = (['openai', 'anthropic', 'gemini'] as const)
  .flatMap((dialect) => [false, true].map((stream) => ({ dialect, stream })))
  .filter(({ dialect, stream }) => !(dialect === 'gemini' && stream))

describe('runTurns: tool arguments holding a number beyond JSON’s range', () => {
  for (const { dialect, stream } of cases) {
    it(`${dialect}, ${stream ? 'streamed' : 'whole'}: the tool is not run; the model reads why and the run goes on`, async () => {
      const fake = await fakes.start({ dialect })
      fake.enqueue(
        reply.text('', {
          toolCalls: [
            { id: 'call_1', name: 'set', arguments: undefined, argumentsJson: '{"t":1e999}' },
          ],
        }),
      )
      fake.setReply(reply.text('done'))
      const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
      const ran: unknown[] = []
      const result = await runTurns({
        operationId: `set-${dialect}-${stream}`,
        messages: [user('set t')],
        tools: {
          set: (args) => {
            ran.push((args as { t: unknown }).t)
            return 'ok'
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
      expect(ran).toEqual([])
      expect(result.response.content).toEqual([{ type: 'text', text: 'done' }])
      expect(fake.requests).toHaveLength(2)
      const results = result.messages.find((m) => m.role === 'tool')?.content
      expect(results).toMatchObject([
        {
          type: 'tool_result',
          content: expect.stringMatching(/beyond JSON's range \(Infinity at t\).*not run/),
          isError: true,
        },
      ])
      // Back in the history in a form every wire writes, the number as its text.
      const call = (result.messages[1]?.content as ChatResponse['content'] | undefined)?.[0]
      expect(call).toMatchObject({ type: 'tool_call', arguments: { t: 'Infinity' } })
      expect(call).not.toHaveProperty('rawArguments')
    })
  }
})
