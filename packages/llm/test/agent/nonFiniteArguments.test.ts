import { reply } from '@hourglass/testkit'
import { describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { callModel } from '../../src/call/callModel.js'
import type { ChatResponse } from '../../src/types.js'
import { useFakes, user } from '../call/support/fakes.js'

// A model wrote {"t":1e999}: read, it is Infinity. The tool ran on t =
// Infinity, and the next turn, which writes the call again, was refused
// (InvalidChatRequestError at its arguments' t) on Anthropic's and Gemini's
// wire: the side effect done, the run dead.

const fakes = useFakes()

// Gemini's stream too: it handed the call on as `JSON.stringify(args)`, so
// the tool ran on t = null, with no Infinity left to see.
const cases = (['openai', 'anthropic', 'gemini'] as const).flatMap((dialect) =>
  [false, true].map((stream) => ({ dialect, stream })),
)

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

/** A store outside the process (Redis, a table): every record goes through JSON. */
class JsonStore implements SideEffectStore {
  readonly data = new Map<string, string>()
  get(key: string): SideEffectRecord | undefined {
    const raw = this.data.get(key)
    return raw === undefined ? undefined : (JSON.parse(raw) as SideEffectRecord)
  }
  set(key: string, record: SideEffectRecord): void {
    this.data.set(key, JSON.stringify(record))
  }
}

// The answer is remembered as the model gave it (the call to `t` = 1e999
// beside one to `t` = 2, which runs): through JSON, Infinity is `null`, and
// a rerun after a failure replayed the call as `{ t: null }` — and ran it.
describe('runTurns: a call refused for a number beyond JSON’s range, replayed through a JSON store', () => {
  for (const dialect of ['openai', 'anthropic', 'gemini'] as const) {
    it(`${dialect}: the rerun does not run it either, and rebuilds the first run's history`, async () => {
      const fake = await fakes.start({ dialect })
      fake.enqueue(
        reply.text('', {
          toolCalls: [
            {
              id: 'call_1',
              name: 'set',
              arguments: undefined,
              argumentsJson: '{"t":1e999,"u":[1,-1e999]}',
            },
            { id: 'call_2', name: 'set', arguments: { t: 2 } },
          ],
        }),
      )
      fake.setReply(reply.text('done'))
      const model = fakes.adapterFor(dialect, fake.baseURL, 'fake-model')
      const ran: unknown[] = []
      let failed = false
      const store = new JsonStore()
      const run = () =>
        runTurns({
          operationId: `replay-${dialect}`,
          messages: [user('set t')],
          store,
          tools: {
            set: (args) => {
              ran.push(args)
              return 'ok'
            },
          },
          call: async (messages, { idempotencyKey, signal, turn }) => {
            if (turn === 2 && !failed) {
              failed = true
              throw new Error('provider down')
            }
            return callModel({
              models: [model],
              request: { messages, maxTokens: 100 },
              idempotencyKey,
              signal,
            })
          },
        })
      await expect(run()).rejects.toThrow('provider down')
      expect(ran).toEqual([{ t: 2 }])
      const rerun = await run()
      // Before: [{ t: 2 }, { t: null }].
      expect(ran).toEqual([{ t: 2 }])
      // Turn 1 replayed, not asked again: turn 1, then the rerun's turn 2.
      expect(fake.requests).toHaveLength(2)
      expect(rerun.response.content).toEqual([{ type: 'text', text: 'done' }])
      const results = rerun.messages.find((m) => m.role === 'tool')?.content
      expect(results).toMatchObject([
        {
          type: 'tool_result',
          content: expect.stringMatching(/beyond JSON's range \(Infinity at t\).*not run/),
          isError: true,
        },
        { type: 'tool_result', content: 'ok' },
      ])
      // As the first run left it: the number as its text.
      const calls = rerun.messages[1]?.content as ChatResponse['content'] | undefined
      expect(calls?.[0]).toMatchObject({
        type: 'tool_call',
        arguments: { t: 'Infinity', u: [1, '-Infinity'] },
      })
    })
  }
})
