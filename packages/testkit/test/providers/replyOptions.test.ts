import { describe, expect, it } from 'vitest'
import { reply } from '../../src/providers/index.js'

// Everything else in the kit refuses a typo; these builders took any key and
// any finish reason, and the test got a reply other than the one it wrote.
describe('reply builders refuse what they would ignore', () => {
  it('reply.text(): an unknown option, naming the one meant', () => {
    // Ignored, `cutAfterToken` sent a complete stream to a test of a cut one.
    expect(() => reply.text('one two', { cutAfterToken: 2 } as never)).toThrow(TypeError)
    expect(() => reply.text('one two', { cutAfterToken: 2 } as never)).toThrow(
      'unknown option "cutAfterToken" (did you mean cutAfterTokens?); reply.text() takes tokens, thinking,',
    )
    expect(() => reply.text('x', { latencyMS: 5 } as never)).toThrow(
      'unknown option "latencyMS" (did you mean latencyMs?)',
    )
  })

  it('reply.text(): a finishReason the fake does not know, naming the one meant', () => {
    // Anthropic's word on an Anthropic route gave an answer with no stop_reason
    // at all; on Gemini, no finishReason.
    expect(() => reply.text('x', { finishReason: 'max_tokens' } as never)).toThrow(
      new TypeError(
        'reply.text(): finishReason must be one of stop, length, tool_calls, content_filter (the fake sends each dialect\'s word for it), got "max_tokens" (did you mean length?)',
      ),
    )
    expect(() => reply.text('x', { finishReason: 'STOP' } as never)).toThrow('(did you mean stop?)')
    expect(() => reply.text('x', { finishReason: 'end_turn' } as never)).toThrow(
      '(did you mean stop?)',
    )
    expect(() => reply.text('x', { finishReason: 'done' } as never)).toThrow(/got "done"$/)
    expect(reply.text('x', { finishReason: 'length' })).toMatchObject({ finishReason: 'length' })
  })

  it('reply.hang() and reply.error(): an unknown option', () => {
    expect(() => reply.hang({ afterHeader: true } as never)).toThrow(
      'unknown option "afterHeader" (did you mean afterHeaders?); reply.hang() takes afterHeaders, keepAliveEveryMs',
    )
    expect(() => reply.error(500, 'x', {}, { delayMs: 5 } as never)).toThrow(
      'unknown option "delayMs"; reply.error() takes latencyMs',
    )
    expect(reply.hang({ afterHeaders: true, keepAliveEveryMs: 5 })).toEqual({
      kind: 'hang',
      afterHeaders: true,
      keepAliveEveryMs: 5,
    })
  })
})
