import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { ChatResponse, ContentBlock } from '../../src/types.js'
import { openAILengthAnswer } from '../call/support/openAILengthAnswer.js'

// runTurns remembers a turn's answer only when a tool runs on it: the
// answer a rerun must read, so that its tool calls (and their keys) are the
// ones that ran. Remembered whenever it held a call, an answer whose call
// never ran — its arguments cut at maxTokens, say — was replayed to a rerun
// with a larger cap instead of being asked again; and tools counted by
// their enumerable keys missed one defined otherwise, which ran while its
// answer went unremembered, so a rerun sent a reworded email again.

function answer(content: ContentBlock[], finishReason: ChatResponse['finishReason']): ChatResponse {
  const text = content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  return {
    id: 'r',
    model: 'm',
    provider: 'stub',
    content,
    text,
    finishReason,
    usage: { inputTokens: 1, outputTokens: 1 },
  }
}

describe('runTurns remembers only an answer a tool ran on', () => {
  // The whole answer an OpenAI-compatible server gives for a call cut right
  // after its name: blank arguments, `finish_reason: length` — read `{}`
  // (marked by the parser as the call's end that did not come).
  const cutBeforeArguments = () => openAILengthAnswer([{ id: 'c1', arguments: '' }])
  const cutMidArguments = () =>
    answer(
      [{ type: 'tool_call', id: 'c1', name: 'send_email', arguments: '{"body":"Hi B' }],
      'length',
    )

  it.each([
    ['mid-arguments', cutMidArguments],
    // Before: the refused answer was remembered, replayed to the rerun, and
    // refused again — the rerun's larger cap never reached the model.
    ['before any argument came ({})', cutBeforeArguments],
  ])(
    'a call cut at maxTokens %s ran nothing: a rerun with a larger cap asks the model again',
    async (_name, cut) => {
      const store = new MemorySideEffectStore()
      const asked: number[] = []
      const sent: string[] = []
      let calls = 0
      const run = (maxTokens: number) =>
        runTurns({
          operationId: 'email-bob',
          deadline: false,
          messages: [{ role: 'user', content: 'Email Bob.' }],
          store,
          tools: {
            send_email: (args) => {
              sent.push((args as { body: string }).body)
              return 'sent'
            },
          },
          call: async (_messages, { turn }) => {
            calls++
            if (turn === 1) {
              asked.push(maxTokens)
              return maxTokens < 100
                ? cut()
                : answer(
                    [
                      {
                        type: 'tool_call',
                        id: 'c1',
                        name: 'send_email',
                        arguments: { body: 'Hi Bob' },
                      },
                    ],
                    'tool_calls',
                  )
            }
            // The cut call's turn 2 (the model read why): the first run fails here.
            if (calls === 2) throw new Error('provider 500')
            return answer([{ type: 'text', text: 'Done.' }], 'stop')
          },
        })
      await expect(run(16)).rejects.toThrow('provider 500')
      expect(sent).toEqual([])
      const rerun = await run(4096)
      expect(rerun.response.text).toBe('Done.')
      expect(asked).toEqual([16, 4096])
      expect(sent).toEqual(['Hi Bob'])
    },
  )

  it('a tool defined as a non-enumerable own property counts: its answer is remembered, the email sent once', async () => {
    const store = new MemorySideEffectStore()
    const sent: string[] = []
    const tools = {}
    Object.defineProperty(tools, 'send_email', {
      value: (args: { body: string }) => {
        sent.push(args.body)
        return 'sent'
      },
    })
    let calls = 0
    const run = () =>
      runTurns({
        operationId: 'email-bob-hidden',
        deadline: false,
        messages: [{ role: 'user', content: 'Email Bob.' }],
        store,
        tools,
        call: async (_messages, { turn }) => {
          calls++
          if (turn === 1) {
            const body = `Hi Bob (wording ${calls})`
            return answer(
              [{ type: 'tool_call', id: `c${calls}`, name: 'send_email', arguments: { body } }],
              'tool_calls',
            )
          }
          if (calls === 2) throw new Error('provider 500')
          return answer([{ type: 'text', text: 'Done.' }], 'stop')
        },
      })
    await expect(run()).rejects.toThrow('provider 500')
    expect((await run()).response.text).toBe('Done.')
    expect(sent).toEqual(['Hi Bob (wording 1)'])
  })
})

it('a non-enumerable tool that is no function is refused before any model call, as an enumerable one is', async () => {
  const tools = {}
  Object.defineProperty(tools, 'send_email', { value: { description: 'an SDK tool object' } })
  let calls = 0
  const run = runTurns({
    operationId: 'hidden-not-a-function',
    deadline: false,
    messages: [{ role: 'user', content: 'Email Bob.' }],
    tools,
    call: async () => {
      calls++
      return answer([{ type: 'text', text: 'Done.' }], 'stop')
    },
  })
  await expect(run).rejects.toThrow('runTurns: tools["send_email"] must be a function')
  expect(calls).toBe(0)
})
