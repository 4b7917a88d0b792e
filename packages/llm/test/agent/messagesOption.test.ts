import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { withRepair } from '../../src/agent/withRepair.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'

// A prompt string for `messages` (`messages: 'hi'`) was spread into one
// "message" per character, ['h', 'i'], and handed to `call` — a model call
// of your own sent it on —; no array at all (a single message object,
// undefined) failed as "options.messages is not iterable". Refused first,
// naming the option.

function countingCall() {
  const calls: ChatMessage[][] = []
  const call = async (messages: ChatMessage[]): Promise<ChatResponse> => {
    calls.push(messages)
    return {
      id: 'r',
      model: 'm',
      provider: 'stub',
      content: [{ type: 'text', text: '{}' }],
      text: '{}',
      finishReason: 'stop',
      usage: { inputTokens: 1, outputTokens: 1 },
    }
  }
  return { calls, call }
}

const WRONG: Array<[unknown, RegExp]> = [
  ['hi', /messages must be an array of messages \(\{ role, content \}\), got 'hi' \(a string\)/],
  [{ role: 'user', content: 'hi' }, /messages must be an array of messages/],
  [undefined, /messages must be an array of messages/],
]

describe('runTurns and withRepair refuse messages that are no array, before any model call', () => {
  it('runTurns', async () => {
    const model = countingCall()
    for (const [messages, said] of WRONG) {
      await expect(
        runTurns({
          operationId: 'op-messages',
          messages: messages as ChatMessage[],
          call: model.call,
          tools: {},
          store: new MemorySideEffectStore(),
        }),
      ).rejects.toThrow(said)
    }
    expect(model.calls).toEqual([])
    const ok = await runTurns({
      operationId: 'op-messages-ok',
      messages: [{ role: 'user', content: 'hi' }],
      call: model.call,
      tools: {},
    })
    expect(ok.turns).toBe(1)
  })

  it('withRepair', async () => {
    const model = countingCall()
    for (const [messages, said] of WRONG) {
      await expect(
        withRepair(model.call, (r) => JSON.parse(r.text), { messages: messages as ChatMessage[] }),
      ).rejects.toThrow(said)
    }
    expect(model.calls).toEqual([])
    const ok = await withRepair(model.call, (r) => JSON.parse(r.text), {
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(ok.value).toEqual({})
  })
})
