import { describe, expect, it } from 'vitest'
import { MemorySideEffectStore } from '../../src/agent/MemorySideEffectStore.js'
import { runTurns } from '../../src/agent/runTurns.js'
import type { SideEffectRecord, SideEffectStore } from '../../src/agent/SideEffectStore.js'
import { parseAnthropicResponse } from '../../src/dialects/anthropic/response.js'
import type { ChatMessage, ChatResponse } from '../../src/types.js'
import { openAILengthAnswer } from '../call/support/openAILengthAnswer.js'

// An answer with a whole call and, last, a call cut at the token limit is
// remembered (the whole call runs) and the cut one refused. Its parser marks
// the cut call with a symbol, which a store over Redis or a table (JSON, as
// the README invites) drops: a rerun replayed the answer unmarked and ran the
// call the first run refused — send_email on {}, or on { to } with no body.

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

const ANN = { to: 'ann@example.com', body: 'Hi Ann' }

const openaiCut = () =>
  openAILengthAnswer([
    { id: 'c0', arguments: JSON.stringify(ANN) },
    { id: 'c1', arguments: '' },
  ])

const anthropicCut = () =>
  parseAnthropicResponse({
    id: 'msg_1',
    model: 'claude',
    type: 'message',
    role: 'assistant',
    stop_reason: 'max_tokens',
    content: [
      { type: 'tool_use', id: 'c0', name: 'send_email', input: ANN },
      { type: 'tool_use', id: 'c1', name: 'send_email', input: { to: 'bob@example.com' } },
    ],
    usage: { input_tokens: 1, output_tokens: 1 },
  })

const done = (): ChatResponse => ({
  id: 'r2',
  model: 'm',
  provider: 'stub',
  content: [{ type: 'text', text: 'Done.' }],
  text: 'Done.',
  finishReason: 'stop',
  usage: { inputTokens: 1, outputTokens: 1 },
})

/** The first run fails after its tools (turn 2's model call); a rerun of the operation follows. */
async function failThenRerun(store: SideEffectStore, operationId: string, cut: () => ChatResponse) {
  const sent: unknown[] = []
  let asked = 0
  const run = () =>
    runTurns({
      operationId,
      deadline: false,
      messages: [{ role: 'user', content: 'Email Ann and Bob.' }],
      store,
      tools: {
        send_email: (args) => {
          sent.push(args)
          return 'sent'
        },
      },
      call: async (_messages, { turn }) => {
        asked++
        if (turn === 1) return cut()
        if (asked === 2) throw new Error('provider 500')
        return done()
      },
    })
  await expect(run()).rejects.toThrow('provider 500')
  const firstRun = [...sent]
  const rerun = await run()
  return { firstRun, rerunSent: sent.slice(firstRun.length), rerun, asked }
}

function toolResults(messages: ChatMessage[]): unknown[] {
  return messages
    .filter((m) => m.role === 'tool')
    .flatMap((m) => (m.content as Array<{ content: unknown }>).map((b) => b.content))
}

const CUT_RESULT =
  'the answer was cut at its token limit before this call was finished; the tool was not run'

describe('a remembered answer with a cut call, replayed through a JSON store', () => {
  it.each([
    ['openai (no argument text)', openaiCut],
    ['anthropic (last tool_use of max_tokens)', anthropicCut],
  ] as const)('%s: the rerun refuses the cut call as the first run did', async (wire, cut) => {
    const { firstRun, rerunSent, rerun, asked } = await failThenRerun(
      new JsonStore(),
      `json-${wire}`,
      cut,
    )
    expect(firstRun).toEqual([ANN])
    // Before: the rerun sent { } (OpenAI) or { to: 'bob@example.com' } (Anthropic).
    expect(rerunSent).toEqual([])
    expect(toolResults(rerun.messages)).toEqual(['sent', CUT_RESULT])
    // Turn 1 replayed (not asked again): 1 + 1 failed + 1.
    expect(asked).toBe(3)
  })

  it('the in-process store replays it so too', async () => {
    const { rerunSent, rerun } = await failThenRerun(
      new MemorySideEffectStore(),
      'memory-openai',
      openaiCut,
    )
    expect(rerunSent).toEqual([])
    expect(toolResults(rerun.messages)).toEqual(['sent', CUT_RESULT])
  })

  it('an answer remembered by an earlier version (the bare ChatResponse) is still replayed', async () => {
    // What versions before the cut call was named beside it wrote: the answer itself.
    const store = new JsonStore()
    const set = store.set.bind(store)
    store.set = (key, record) =>
      set(key, { ...record, value: (record.value as { response: unknown }).response })
    const { firstRun, rerunSent, asked } = await failThenRerun(store, 'legacy-openai', openaiCut)
    expect(firstRun).toEqual([ANN])
    // Replayed, not asked again: Ann's call has the key it ran under.
    expect(asked).toBe(3)
    expect(rerunSent.filter((a) => JSON.stringify(a) === JSON.stringify(ANN))).toEqual([])
  })

  it.each([
    ['null', null, 'null'],
    ['{}', {}, 'an object without a response'],
    ['{ response: null }', { response: null }, 'a response of null'],
    ['{ response: {} }', { response: {} }, 'a response without a content array'],
    [
      "{ response: { content: 'x' } }",
      { response: { content: 'x' } },
      'a response without a content array',
    ],
  ])(
    'a store that gives back %s fails the rerun with a TypeError saying so (was a bare TypeError)',
    async (_, bad, found) => {
      // A custom store that returns something else than it was given: before,
      // "Cannot read properties of null (reading 'content')" and the like.
      const store = new JsonStore()
      const set = store.set.bind(store)
      store.set = (key, record) => set(key, { ...record, value: bad })
      const error = await failThenRerun(store, 'malformed-openai', openaiCut).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(TypeError)
      expect((error as Error).message).toBe(
        `runTurns: the answer the side-effect store gave back for turn 1 of operation "malformed-openai" is not one it was given ({ response, cutCallId? }, response a ChatResponse with a content array), got ${found}`,
      )
    },
  )
})
