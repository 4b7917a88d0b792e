import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { type RunTurnsOptions, runTurns } from '../../src/agent/runTurns.js'
import { type SideEffectOptions, sideEffect } from '../../src/agent/sideEffect.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'

// `tools` and `call` were taken as they came. A tool that is no function (an
// SDK's tool object, `{ run }`, passed for the function) reached the model as
// a failure of the tool ("tool is not a function") after a paid model call,
// and the run went on as if the tool had failed; a missing `tools` crashed
// the run with "Cannot convert undefined or null to object" once the model
// asked for one. Both are the caller's mistake: refused before the first
// model call, naming the option.

const answer = (content: ChatResponse['content']): ChatResponse => ({
  id: 'r',
  model: 'm',
  provider: 'stub',
  content,
  text: '',
  finishReason: content.some((b) => b.type === 'tool_call') ? 'tool_calls' : 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})

function countingModel(): { calls: number; call: (m: ChatMessage[]) => Promise<ChatResponse> } {
  const model = {
    calls: 0,
    call: async (messages: ChatMessage[]) => {
      model.calls++
      return messages.at(-1)?.role === 'tool'
        ? answer([{ type: 'text', text: 'done' }])
        : answer([{ type: 'tool_call', id: 'c1', name: 'search', arguments: { q: 'x' } }])
    },
  }
  return model
}

const base = (model: ReturnType<typeof countingModel>) => ({
  operationId: 'op',
  messages: [{ role: 'user' as const, content: 'hi' }],
  call: model.call,
  store: new MemorySideEffectStore(),
})

describe('runTurns: tools and call are checked before the first model call', () => {
  const badTools: Array<[string, unknown]> = [
    ['missing', undefined],
    ['null', null],
    ['an array', [async () => 1]],
    ['a tool that is an object', { search: { run: async () => 1 } }],
    ['a tool that is a string', { search: 'search' }],
  ]
  for (const [name, tools] of badTools) {
    it(`tools ${name}: a TypeError naming the option, and no model call`, async () => {
      const model = countingModel()
      await expect(
        runTurns({ ...base(model), tools: tools as Record<string, never> }),
      ).rejects.toThrow(/runTurns: tools/)
      expect(model.calls).toBe(0)
    })
  }

  it('an option name it does not read (maxTurn): a TypeError naming the one meant, and no model call', async () => {
    const model = countingModel()
    await expect(
      runTurns({ ...base(model), tools: {}, maxTurn: 3 } as unknown as RunTurnsOptions),
    ).rejects.toThrow('unknown option "maxTurn" (did you mean maxTurns?); runTurns() takes')
    expect(model.calls).toBe(0)
  })

  it('sideEffect: an option name it does not read (ttl) is a TypeError, the effect not run', () => {
    let runs = 0
    expect(() =>
      sideEffect('op:send', () => ++runs, { ttl: 0 } as unknown as SideEffectOptions),
    ).toThrow('unknown option "ttl" (did you mean ttlMs?); sideEffect() takes')
    expect(runs).toBe(0)
  })

  it('call that is no function: a TypeError naming the option', async () => {
    await expect(
      runTurns({
        operationId: 'op',
        messages: [],
        call: 'gpt' as never,
        tools: {},
      }),
    ).rejects.toThrow(/runTurns: call/)
  })

  it('tools of functions (an empty object too) still run', async () => {
    const model = countingModel()
    const result = await runTurns({ ...base(model), tools: { search: async () => ['a'] } })
    expect(result.turns).toBe(2)
    const none = countingModel()
    const ended = await runTurns({ ...base(none), tools: {} })
    expect(ended.turns).toBe(2)
  })
})
