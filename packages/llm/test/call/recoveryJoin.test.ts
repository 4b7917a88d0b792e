import { describe, expect, it } from 'vitest'
import { recoverOutputLimit } from '../../src/call/recoverOutputLimit.js'
import type { ChatRequest, ChatResponse, ContentBlock, Usage } from '../../src/types.js'

const request: ChatRequest = { messages: [{ role: 'user', content: 'Go.' }], maxTokens: 10 }

function part(
  content: ContentBlock[],
  usage: Usage,
  finishReason: ChatResponse['finishReason'] = 'length',
): ChatResponse {
  const text = content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  const refusal = content
    .filter((b) => b.type === 'text' && b.refusal === true)
    .map((b) => (b as { text: string }).text)
  return {
    id: `r-${text.length}`,
    model: 'm',
    provider: 'p',
    content,
    text,
    finishReason,
    usage,
    ...(refusal.length > 0 ? { refusal: refusal.join('') } : {}),
  }
}

/** Runs the recovery with the answers given, in order, after `first`. */
function recover(first: ChatResponse, ...next: ChatResponse[]): Promise<ChatResponse> {
  let sent = 0
  return recoverOutputLimit(
    first,
    request,
    { maxTokensCeiling: 0 },
    async (asked) => {
      sent++
      const answer = next.shift()
      if (answer === undefined) throw new Error('asked for more answers than the test gave')
      return { response: answer, request: asked }
    },
    () => sent,
  )
}

describe('max_tokens recovery: the joined answer', () => {
  it('sums cached input and reasoning tokens across the parts, not only input and output', async () => {
    const joined = await recover(
      part([{ type: 'text', text: 'cut ' }], {
        inputTokens: 100,
        outputTokens: 10,
        cachedInputTokens: 80,
        reasoningTokens: 4,
      }),
      part(
        [{ type: 'text', text: 'end' }],
        { inputTokens: 120, outputTokens: 6, cachedInputTokens: 100, reasoningTokens: 2 },
        'stop',
      ),
    )
    expect(joined.text).toBe('cut end')
    expect(joined.usage).toEqual({
      inputTokens: 220,
      outputTokens: 16,
      cachedInputTokens: 180,
      reasoningTokens: 6,
    })
  })

  it('sums the prompt-cache writes and the Predicted Outputs counts too (every optional count of Usage)', async () => {
    const joined = await recover(
      part([{ type: 'text', text: 'a' }], {
        inputTokens: 100,
        outputTokens: 10,
        cacheCreationInputTokens: 90,
        cacheCreation1hInputTokens: 40,
        acceptedPredictionTokens: 5,
        rejectedPredictionTokens: 1,
      }),
      part(
        [{ type: 'text', text: 'b' }],
        {
          inputTokens: 100,
          outputTokens: 6,
          acceptedPredictionTokens: 2,
          rejectedPredictionTokens: 3,
        },
        'stop',
      ),
    )
    expect(joined.usage).toEqual({
      inputTokens: 200,
      outputTokens: 16,
      cacheCreationInputTokens: 90,
      cacheCreation1hInputTokens: 40,
      acceptedPredictionTokens: 7,
      rejectedPredictionTokens: 4,
    })
  })

  it('counts the optional tokens of the parts that reported them, and adds none when no part did', async () => {
    const some = await recover(
      part([{ type: 'text', text: 'a' }], { inputTokens: 1, outputTokens: 1 }),
      part(
        [{ type: 'text', text: 'b' }],
        { inputTokens: 1, outputTokens: 1, reasoningTokens: 3 },
        'stop',
      ),
    )
    expect(some.usage).toEqual({ inputTokens: 2, outputTokens: 2, reasoningTokens: 3 })
    const none = await recover(
      part([{ type: 'text', text: 'a' }], { inputTokens: 1, outputTokens: 1 }),
      part([{ type: 'text', text: 'b' }], { inputTokens: 1, outputTokens: 1 }, 'stop'),
    )
    expect(none.usage).toEqual({ inputTokens: 2, outputTokens: 2 })
  })

  it('keeps a refusal cut by the cap a refusal: its parts join each other, not the answer text', async () => {
    const usage = { inputTokens: 1, outputTokens: 1 }
    const joined = await recover(
      part([{ type: 'text', text: "I can't help ", refusal: true }], usage),
      part([{ type: 'text', text: 'with that.', refusal: true }], usage, 'stop'),
    )
    expect(joined.content).toEqual([
      { type: 'text', text: "I can't help with that.", refusal: true },
    ])
    expect(joined.refusal).toBe("I can't help with that.")
  })

  it('never marks answer text as refusal, nor takes the last part alone as the refusal', async () => {
    const usage = { inputTokens: 1, outputTokens: 1 }
    const joined = await recover(
      part([{ type: 'text', text: 'No: ', refusal: true }], usage),
      part([{ type: 'text', text: '{"a":1}' }], usage, 'stop'),
    )
    expect(joined.content).toEqual([
      { type: 'text', text: 'No: ', refusal: true },
      { type: 'text', text: '{"a":1}' },
    ])
    expect(joined.refusal).toBe('No: ')
    const answerThenRefusal = await recover(
      part([{ type: 'text', text: 'partial ' }], usage),
      part([{ type: 'text', text: 'refused', refusal: true }], usage, 'stop'),
    )
    expect(answerThenRefusal.content).toEqual([
      { type: 'text', text: 'partial ' },
      { type: 'text', text: 'refused', refusal: true },
    ])
    expect(answerThenRefusal.refusal).toBe('refused')
  })
})
