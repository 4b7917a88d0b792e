import { describe, expect, it } from 'vitest'
import { unreadableValues } from '../../../../test/support/unreadableValues.js'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import { isSideEffectStoreError } from '../../src/errors/SideEffectStoreError.js'
import type { ChatMessage, ChatResponse, ContentBlock } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// A tool's value reached the model through `JSON.stringify` inside the
// `try` that reports a tool's failure: a value JSON cannot carry (a BigInt
// id, a circular SDK object) told the model the tool had failed although it
// had run (the email sent) — so it called it again — and a re-run of the
// operation got the same remembered value and the same error. A function or
// a symbol gave a tool result with no `content` at all.

/** A model that asks for `send` once, then answers. */
const model = async (messages: ChatMessage[]): Promise<ChatResponse> =>
  messages.at(-1)?.role === 'tool'
    ? chatAnswer([{ type: 'text', text: 'done' }])
    : chatAnswer([{ type: 'tool_call', id: 'call_1', name: 'send', arguments: { to: 'ana' } }])

/** The tool result the model read, from a finished run's history. */
function toolResult(messages: ChatMessage[]): Extract<ContentBlock, { type: 'tool_result' }> {
  const turn = messages.find((m) => m.role === 'tool')
  const block = Array.isArray(turn?.content) ? turn.content[0] : undefined
  if (block?.type !== 'tool_result') throw new Error('no tool result in the history')
  return block
}

describe('runTurns: a tool’s value the model reads', () => {
  const circular: Record<string, unknown> = { id: 'msg_1' }
  circular.self = circular
  const shared = { ok: true }
  const cases: Array<[string, unknown, string]> = [
    ['a BigInt', 12345678901234567890n, '"12345678901234567890"'],
    ['a nested BigInt', { id: 7n, at: [1n] }, '{"id":"7","at":["1"]}'],
    ['a circular object', circular, '{"id":"msg_1","self":"[Circular]"}'],
    [
      'a shared, not circular, object',
      { a: shared, b: shared },
      '{"a":{"ok":true},"b":{"ok":true}}',
    ],
    ['a function', () => 1, 'null'],
    ['a symbol', Symbol('sent'), 'null'],
    ['undefined', undefined, 'null'],
  ]
  for (const [name, value, content] of cases) {
    it(`${name}: the tool completed, and a re-run reads the same result without running it again`, async () => {
      const store = new MemorySideEffectStore()
      let runs = 0
      const options = {
        operationId: `result-${name}`,
        messages: [{ role: 'user', content: 'email Ana' }] satisfies ChatMessage[],
        call: model,
        store,
        tools: {
          send: () => {
            runs++
            return value
          },
        },
      }
      const first = toolResult((await runTurns(options)).messages)
      expect(first).toEqual({ type: 'tool_result', toolCallId: 'call_1', content })
      const again = toolResult((await runTurns(options)).messages)
      expect(again).toEqual(first)
      expect(runs).toBe(1)
    })
  }

  it('a value whose toJSON throws: the model reads that the tool completed, not that it failed', async () => {
    const result = await runTurns({
      operationId: 'result-toJSON-throws',
      messages: [{ role: 'user', content: 'email Ana' }],
      call: model,
      store: new MemorySideEffectStore(),
      tools: {
        send: () => ({
          toJSON() {
            throw new Error('not serialisable')
          },
        }),
      },
    })
    const block = toolResult(result.messages)
    expect(block.isError).toBeUndefined()
    expect(block.content).toBe(
      'the tool completed, but its result could not be written as JSON (not serialisable)',
    )
  })

  /** What the model reads of each value a tool throws, one run each. */
  async function readOfThrown(thrown: unknown[]): Promise<string[]> {
    const read: string[] = []
    for (const [i, error] of thrown.entries()) {
      const result = await runTurns({
        operationId: `thrown-${i}`,
        messages: [{ role: 'user', content: 'email Ana' }],
        call: model,
        store: new MemorySideEffectStore(),
        tools: {
          send: () => {
            throw error
          },
        },
      })
      const block = toolResult(result.messages)
      expect(block.isError).toBe(true)
      read.push(block.content)
    }
    return read
  }

  it('a tool failing with an error without a message: the model reads its code and inner errors, not an empty result', async () => {
    const refused = (address: string) =>
      Object.assign(new Error(`connect ECONNREFUSED ${address}`), { code: 'ECONNREFUSED' })
    const read = await readOfThrown([
      // What Node's net throws when every address of a host refuses.
      Object.assign(new AggregateError([refused('::1:80'), refused('127.0.0.1:80')], ''), {
        code: 'ECONNREFUSED',
      }),
      new Error(),
    ])
    expect(read).toEqual([
      'ECONNREFUSED: connect ECONNREFUSED ::1:80; connect ECONNREFUSED 127.0.0.1:80',
      'the tool failed (Error)',
    ])
  })

  it('a tool failing with an error whose message cannot be read, or a revoked Proxy: the model reads that, not "an object"', async () => {
    const read = await readOfThrown([
      unreadableValues['an Error whose message getter throws']?.(),
      Object.assign(new Error('x'), { message: { text: 'not a string' } }),
      unreadableValues['a revoked Proxy']?.(),
    ])
    expect(read).toEqual([
      'an error whose message cannot be read',
      'an error whose message cannot be read',
      // Before: sideEffect's own TypeError of asking what it was.
      'a value that cannot be described',
    ])
  })
})

describe('runTurns: a side-effect store that cannot be read', () => {
  // The store's outage as the store throws it: an Error, and values whose
  // message cannot be read (their own getter's Error, or a revoked Proxy's
  // TypeError, came out of SideEffectStoreError's constructor in its place).
  const outages: [string, () => unknown][] = [
    ['an Error', () => new Error('connect ECONNREFUSED 10.0.3.7:6379')],
    ...Object.entries(unreadableValues),
  ]

  it.each(outages)(
    'a store failing with %s fails the run with SIDE_EFFECT_STORE_FAILED (the value its cause); the tool is not run and the model is not told the tool failed',
    async (_, make) => {
      const outage = make()
      let reads = 0
      const store = {
        get: async () => {
          reads++
          throw outage
        },
        set: async () => {},
      }
      let runs = 0
      const calls: ChatMessage[][] = []
      const error = await runTurns({
        operationId: 'store-down',
        messages: [{ role: 'user', content: 'email Ana' }],
        call: async (messages) => {
          calls.push(messages)
          return model(messages)
        },
        tools: {
          send: () => {
            runs++
            return 'sent'
          },
        },
        store,
      }).then(
        (result) => result.messages,
        (thrown: unknown) => thrown,
      )
      // Before: the run answered 'done', its model having read the store's
      // error — a Redis address — as the tool's result.
      expect(isSideEffectStoreError(error)).toBe(true)
      expect(error).toMatchObject({ code: 'SIDE_EFFECT_STORE_FAILED' })
      expect((error as { cause: unknown }).cause).toBe(outage)
      // Read for turn 1's answer (unread, the model was asked), then for the tool.
      expect(reads).toBe(2)
      expect(runs).toBe(0)
      // One model call (the one that asked for the tool): nothing went back to it.
      expect(calls).toHaveLength(1)
    },
  )
})

describe('runTurns: a model call that rejects with a revoked Proxy', () => {
  it('the run rejects with that value, not with the TypeError of asking what it was', async () => {
    const thrown = unreadableValues['a revoked Proxy']?.()
    const got = await runTurns({
      operationId: 'call-rejects-unreadable',
      messages: [{ role: 'user', content: 'email Ana' }],
      call: async () => {
        throw thrown
      },
      tools: { send: () => 'sent' },
      store: new MemorySideEffectStore(),
    }).then(
      () => ({ error: 'none' as unknown }),
      // Wrapped: a promise settled with a revoked Proxy reads its `then`.
      (error: unknown) => ({ error }),
    )
    expect(got.error === thrown).toBe(true)
  })
})
