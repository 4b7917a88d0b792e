import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// A tool whose value JSON writes as a string — a Date, a MongoDB ObjectId, a
// URL (their `toJSON`) — was handed to the model as a quoted JSON string
// (`"\"2026-12-08T09:00:00.000Z\""`) on the run that called it, but as the
// bare string on a rerun that read it back from a store outside the process
// (Redis, a table: JSON). The history then differed, so the next turn's
// remembered answer was not found: the model was asked again, worded its
// call anew, and the email was sent twice.

/** A store outside the process: every record goes through JSON. */
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

const AT = new Date(Date.UTC(2026, 11, 8, 9, 0))

/** A run that books a meeting, emails about it (worded anew each time asked), and fails on turn 3 the first time. */
function agent(store: SideEffectStore) {
  let asked = 0
  let failLast = true
  const emails: unknown[] = []
  const call = async (
    _messages: ChatMessage[],
    { turn }: { turn: number },
  ): Promise<ChatResponse> => {
    asked++
    if (turn === 1)
      return chatAnswer([{ type: 'tool_call', id: 'c1', name: 'schedule', arguments: {} }])
    if (turn === 2) {
      return chatAnswer([
        {
          type: 'tool_call',
          id: 'c2',
          name: 'send_email',
          arguments: { to: 'ana', body: `draft ${asked}` },
        },
      ])
    }
    if (failLast) throw new Error('provider down')
    return chatAnswer([{ type: 'text', text: 'done' }])
  }
  const options = {
    operationId: 'book-and-email',
    messages: [{ role: 'user', content: 'book it and tell Ana' }] satisfies ChatMessage[],
    call,
    store,
    tools: {
      schedule: () => AT,
      send_email: (args: unknown) => {
        emails.push(args)
        return { sent: true }
      },
    },
  }
  return {
    emails,
    async runTwice() {
      await expect(runTurns(options)).rejects.toThrow('provider down')
      failLast = false
      return runTurns(options)
    },
  }
}

describe('runTurns: a tool value JSON writes as a string, rerun through a store outside the process', () => {
  for (const [name, makeStore] of [
    ['in-process store', () => new MemorySideEffectStore()],
    ['JSON store', () => new JsonStore()],
  ] as const) {
    it(`${name}: the rerun reads the same tool result and the email is sent once`, async () => {
      const run = agent(makeStore())
      const result = await run.runTwice()
      const tool = result.messages[2]?.content
      expect(Array.isArray(tool) && tool[0]).toMatchObject({
        type: 'tool_result',
        toolCallId: 'c1',
        content: AT.toISOString(),
      })
      expect(run.emails).toHaveLength(1)
    })
  }
})
