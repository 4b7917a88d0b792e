import { describe, expect, it } from 'vitest'
import { reply, startFakeProvider, type TextReply } from '../../src/index.js'

// "A mistake in a script fails where it is made" (README). A text reply's
// fields of the wrong type passed reply.text() and enqueue: `reply.text(42)`
// or `model: 5` got the request the fake's 500 (`text.match is not a
// function`), a tool call with no name went out 200 without
// `function.name`, and `argumentsJson: 5` as a number where the wire has text.
describe('reply.text() fields of the wrong type', () => {
  it.each([
    ['text 42', () => reply.text(42 as unknown as string), /text must be a string/],
    ['model 5', () => reply.text('x', { model: 5 as unknown as string }), /model must be a string/],
    [
      'thinking 5',
      () => reply.text('x', { thinking: 5 as unknown as string }),
      /thinking must be a string/,
    ],
    [
      'tokens [1]',
      () => reply.text('x', { tokens: [1] as unknown as string[] }),
      /tokens must be an array of strings/,
    ],
    [
      'toolCalls {}',
      () => reply.text('x', { toolCalls: {} as never }),
      /toolCalls must be an array/,
    ],
    [
      'a call without name',
      () => reply.text('x', { toolCalls: [{ arguments: {} } as never] }),
      /toolCalls\[0\]\.name/,
    ],
    [
      'argumentsJson 5',
      () =>
        reply.text('x', {
          toolCalls: [{ name: 'f', arguments: {}, argumentsJson: 5 as unknown as string }],
        }),
      /argumentsJson must be a string/,
    ],
  ])('%s is refused where it is written, a TypeError naming it', (_name, build, message) => {
    expect(build).toThrow(TypeError)
    expect(build).toThrow(message)
  })

  it('enqueue refuses a hand-written one; a right one still goes through', async () => {
    const fake = await startFakeProvider()
    try {
      expect(() => fake.enqueue({ kind: 'text', text: 42 } as unknown as TextReply)).toThrow(
        /text must be a string/,
      )
      fake.enqueue(reply.text('ok', { toolCalls: [{ name: 'f', arguments: { a: 1 } }] }))
    } finally {
      await fake.close()
    }
  })
})
