import { Deadline } from '@hourglass/core'
import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { sideEffect } from '../../src/agent/sideEffect.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'

// `deadline: 5000` (a number of ms, as `Deadline.after` takes it) and
// `signal: controller` (the controller for its signal) failed later with
// "this.deadline?.throwIfExpired is not a function" or untilEnded's "signal
// must be an AbortSignal", naming neither the option nor the function the
// caller wrote. Refused first, naming them, as callModel refuses them.

const answer = (content: ChatResponse['content']): ChatResponse => ({
  id: 'r',
  model: 'm',
  provider: 'stub',
  content,
  text: '',
  finishReason: content.some((b) => b.type === 'tool_call') ? 'tool_calls' : 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})

function countingModel() {
  const model = {
    calls: 0,
    tools: 0,
    call: async (messages: ChatMessage[]) => {
      model.calls++
      return messages.at(-1)?.role === 'tool'
        ? answer([{ type: 'text', text: 'done' }])
        : answer([{ type: 'tool_call', id: 'c1', name: 'send', arguments: { to: 'ana' } }])
    },
  }
  return model
}

const NOT_A_DEADLINE = 5000 as unknown as Deadline
const NOT_A_SIGNAL = new AbortController() as unknown as AbortSignal

describe('sideEffect and runTurns refuse a deadline or signal of the wrong kind, naming it, before anything runs', () => {
  it('sideEffect: a number for deadline, the controller for signal; the store is not read, fn not run', async () => {
    let reads = 0
    const store = new MemorySideEffectStore()
    const counted = {
      get: (key: string) => {
        reads++
        return store.get(key)
      },
      set: store.set.bind(store),
    }
    let sent = 0
    const send = () => ++sent
    expect(() => sideEffect('k', send, { store: counted, deadline: NOT_A_DEADLINE })).toThrow(
      new TypeError(
        'sideEffect: deadline must be a Deadline (Deadline.after(ms)) or false, got 5000',
      ),
    )
    expect(() => sideEffect('k', send, { store: counted, signal: NOT_A_SIGNAL })).toThrow(
      /^sideEffect: signal must be an AbortSignal \(controller\.signal\), got /,
    )
    // The store is read, and fn run, a turn later: let that turn come.
    await new Promise((resolve) => setImmediate(resolve))
    expect(reads).toBe(0)
    expect(sent).toBe(0)
  })

  it('runTurns: the same, rejected before the first model call', async () => {
    const model = countingModel()
    const run = (bounds: { deadline?: Deadline | false; signal?: AbortSignal }) =>
      runTurns({
        operationId: 'op-bounds',
        messages: [{ role: 'user', content: 'hi' }],
        call: model.call,
        tools: { send: () => ++model.tools },
        store: new MemorySideEffectStore(),
        ...bounds,
      })
    await expect(run({ deadline: NOT_A_DEADLINE })).rejects.toThrow(
      new TypeError(
        'runTurns: deadline must be a Deadline (Deadline.after(ms)) or false, got 5000',
      ),
    )
    await expect(run({ signal: NOT_A_SIGNAL })).rejects.toThrow(
      /^runTurns: signal must be an AbortSignal \(controller\.signal\), got /,
    )
    expect(model.calls).toBe(0)
    expect(model.tools).toBe(0)
  })

  it('what they take still runs: a Deadline, false, an AbortSignal', async () => {
    const model = countingModel()
    using deadline = Deadline.after(60_000)
    const result = await runTurns({
      operationId: 'op-bounds-ok',
      messages: [{ role: 'user', content: 'hi' }],
      call: model.call,
      tools: { send: () => ++model.tools },
      store: new MemorySideEffectStore(),
      deadline,
      signal: new AbortController().signal,
    })
    expect(result.turns).toBe(2)
    expect(model.tools).toBe(1)
    expect(await sideEffect('k-ok', () => 'sent', { deadline: false })).toBe('sent')
  })

  it('signal: null is none, for runTurns as for sideEffect (it failed reading null.aborted)', async () => {
    const model = countingModel()
    const result = await runTurns({
      operationId: 'op-bounds-null',
      messages: [{ role: 'user', content: 'hi' }],
      call: model.call,
      tools: { send: () => ++model.tools },
      store: new MemorySideEffectStore(),
      signal: null as unknown as AbortSignal,
    })
    expect(result.turns).toBe(2)
    expect(
      await sideEffect('k-null', () => 'sent', { signal: null as unknown as AbortSignal }),
    ).toBe('sent')
  })
})
