import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { chatAnswer } from '../support/chatAnswer.js'

// Arguments nested 3500 deep are JSON that every dialect reads and writes
// again, but `idempotencyKey` (recursive, three frames a level) overflowed
// on them: the run rejected with a bare "RangeError: Maximum call stack size
// exceeded" after a paid model call. The call is now not run, and the model
// reads why, as for any other call whose arguments cannot be acted on.

describe('runTurns: a tool call whose arguments are too deep for its key', () => {
  it('is an isError tool result, the tool not run; the run goes on', async () => {
    const depth = 3500
    const text = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    let ran = 0
    const call = async (messages: ChatMessage[]): Promise<ChatResponse> =>
      messages.at(-1)?.role === 'tool'
        ? chatAnswer([{ type: 'text', text: 'done' }])
        : chatAnswer([
            {
              type: 'tool_call',
              id: 'c',
              name: 'lookup',
              arguments: JSON.parse(text) as unknown,
              rawArguments: text,
            },
          ])
    const result = await runTurns({
      operationId: 'deep',
      messages: [{ role: 'user', content: 'go' }],
      call,
      store: new MemorySideEffectStore(),
      deadline: false,
      tools: { lookup: () => ran++ },
    })
    expect(result.response.text).toBe('done')
    expect(ran).toBe(0)
    const toolTurn = result.messages[2]?.content
    expect(Array.isArray(toolTurn) && toolTurn[0]).toMatchObject({
      type: 'tool_result',
      toolCallId: 'c',
      isError: true,
    })
  })
})
