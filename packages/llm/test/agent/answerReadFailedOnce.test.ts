import { describe, expect, it } from 'vitest'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// The store's read of a turn's answer failed once (a Redis blip: a command
// rejected while the client reconnected); its next read, the tool's, worked.
// The answer was asked without being remembered, and its tool ran all the
// same: a rerun of the operation asked the model again, which worded the
// email anew — another key, and the email sent twice.

/** A store over JSON (as Redis) whose first `failReads` reads reject. */
function blipStore(failReads: number) {
  const data = new Map<string, string>()
  const store: SideEffectStore = {
    async get(key) {
      if (failReads-- > 0) throw new Error('Connection is closed.')
      const text = data.get(key)
      return text === undefined ? undefined : (JSON.parse(text) as SideEffectRecord)
    },
    async set(key, record) {
      data.set(key, JSON.stringify(record))
    },
  }
  return store
}

describe('runTurns: an answer whose store read failed is remembered before its tools run', () => {
  it('a read that fails once, then works: the rerun reads the answer the tool ran on, and the email goes once', async () => {
    const sent: string[] = []
    let asks = 0
    let failTurn2 = true
    const call = async (
      _messages: ChatMessage[],
      info: { turn: number },
    ): Promise<ChatResponse> => {
      if (info.turn === 1) {
        asks++
        return chatAnswer([
          {
            type: 'tool_call',
            id: `c${asks}`,
            name: 'send_email',
            arguments: { to: 'ana@example.com', body: `Hi Ana (draft ${asks})` },
          },
        ])
      }
      if (failTurn2) {
        failTurn2 = false
        throw new Error('429 Too Many Requests')
      }
      return chatAnswer([{ type: 'text', text: 'Sent.' }])
    }
    const store = blipStore(1)
    const options = () => ({
      operationId: 'ticket-42',
      messages: [{ role: 'user', content: 'email Ana' }] as ChatMessage[],
      call,
      store,
      deadline: false as const,
      tools: {
        send_email: (args: unknown) => {
          sent.push((args as { body: string }).body)
          return { id: `msg-${sent.length}` }
        },
      },
    })
    await expect(runTurns(options())).rejects.toThrow('429')
    const rerun = await runTurns(options())
    expect(rerun.response.text).toBe('Sent.')
    expect(sent).toEqual(['Hi Ana (draft 1)'])
    expect(asks).toBe(1)
  })

  it('a store still down: the tool is not run, the run fails with SideEffectStoreError', async () => {
    let ran = 0
    const error = await runTurns({
      operationId: 'down',
      messages: [{ role: 'user', content: 'email Ana' }],
      call: async () =>
        chatAnswer([{ type: 'tool_call', id: 'c', name: 'send_email', arguments: { to: 'a' } }]),
      store: blipStore(Number.POSITIVE_INFINITY),
      deadline: false,
      tools: { send_email: () => ran++ },
    }).catch((e: unknown) => e)
    expect((error as { code?: string }).code).toBe('SIDE_EFFECT_STORE_FAILED')
    expect(ran).toBe(0)
  })

  it('a store that cannot be read still lets an answer without tool calls through', async () => {
    const result = await runTurns({
      operationId: 'final',
      messages: [{ role: 'user', content: 'hi' }],
      call: async () => chatAnswer([{ type: 'text', text: 'hello' }]),
      store: blipStore(Number.POSITIVE_INFINITY),
      deadline: false,
      tools: { send_email: () => 1 },
    })
    expect(result.response.text).toBe('hello')
  })
})
