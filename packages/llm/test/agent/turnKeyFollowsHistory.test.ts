import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// The key `call` is handed for a turn was the operation and the turn alone:
// a rerun whose history differed at that turn (a tool that failed, then ran
// again and answered) sent another request under the same Idempotency-Key.
// A server that honours the header answers that with the first request's
// answer (read from a tool failure the model no longer sees) or refuses it
// (the IETF draft's 422: a key reused with another payload). The same
// history keeps its key: a rerun of the same request is the same operation.

describe('runTurns: the model call key follows the history it answers', () => {
  it('a turn asked again with another history gets another key; the same history the same key', async () => {
    const store = new MemorySideEffectStore()
    const keys: Array<{ turn: number; key: string; last: string }> = []
    let lookups = 0
    let failTurn2 = true
    const call = async (
      messages: ChatMessage[],
      { turn, idempotencyKey }: { turn: number; idempotencyKey: string },
    ): Promise<ChatResponse> => {
      keys.push({ turn, key: idempotencyKey, last: JSON.stringify(messages.at(-1)) })
      if (turn === 1)
        return chatAnswer([{ type: 'tool_call', id: 'c1', name: 'lookup', arguments: {} }])
      if (failTurn2) throw new Error('provider down')
      return chatAnswer([{ type: 'text', text: 'balance 42' }])
    }
    const options = {
      operationId: 'balance-op',
      messages: [{ role: 'user', content: 'balance?' }] satisfies ChatMessage[],
      call,
      store,
      tools: {
        lookup: () => {
          if (++lookups === 1) throw new Error('db timeout')
          return { balance: 42 }
        },
      },
    }
    await expect(runTurns(options)).rejects.toThrow('provider down')
    failTurn2 = false
    await runTurns(options)
    const turn2 = keys.filter((k) => k.turn === 2)
    expect(turn2).toHaveLength(2)
    expect(turn2[0]!.last).not.toBe(turn2[1]!.last) // another history…
    expect(turn2[0]!.key).not.toBe(turn2[1]!.key) // …another key
    // The first turn's history is the same on the rerun: its answer is
    // replayed (not asked), and a third run asking turn 1 again would send the same key.
    const again: string[] = []
    await runTurns({
      ...options,
      operationId: 'balance-op-2',
      store: new MemorySideEffectStore(),
      call: async (messages, info) => {
        again.push(info.idempotencyKey)
        return call(messages, info)
      },
    })
    const once: string[] = []
    await runTurns({
      ...options,
      operationId: 'balance-op-2',
      store: new MemorySideEffectStore(),
      call: async (messages, info) => {
        once.push(info.idempotencyKey)
        return call(messages, info)
      },
    })
    expect(once[0]).toBe(again[0])
  })
})
