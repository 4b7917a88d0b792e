import { describe, expect, it } from 'vitest'
import { StreamCollector } from '../../src/call/StreamCollector.js'
import { dialects } from '../../src/dialects/dialects.js'
import type { StreamEvent } from '../../src/types.js'

// A refusal given as a content part, `{ type: 'refusal', refusal }` — the
// shape OpenAI's own API takes it in an assistant message's `content` array
// (`ChatCompletionContentPartRefusal`), and the shape of a Responses API
// `output` refusal (`ResponseOutputRefusal`) a compatible server or proxy
// may pass on — is the refusal the README promises: text marked `refusal`,
// and `answer.refusal`. It read as '' (an empty answer, finished `stop`).

function streamed(frames: unknown[]): StreamEvent[] {
  const parser = dialects.openai.createStreamParser()
  const out: StreamEvent[] = []
  for (const frame of frames) {
    const data = typeof frame === 'string' ? frame : JSON.stringify(frame)
    out.push(...parser.parseStreamEvent({ event: undefined, data }))
  }
  out.push(...parser.end())
  return out
}

const chunk = (delta: object, finish: string | null = null) => ({
  id: 'chatcmpl-p',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
})

const answer = (message: object) =>
  dialects.openai.parseResponse({
    id: 'chatcmpl-p',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: 'stop' }],
  })

describe('a refusal given as a content part', () => {
  it('whole: a refusal part is a refusal text block and ChatResponse.refusal', () => {
    const response = answer({ content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] })
    expect(response.refusal).toBe('I cannot help with that.')
    expect(response.content).toEqual([
      { type: 'text', text: 'I cannot help with that.', refusal: true },
    ])
    expect(response.text).toBe('I cannot help with that.')
  })

  it('whole: text parts and a refusal part stay apart', () => {
    const response = answer({
      content: [
        { type: 'output_text', text: 'Partial' },
        { type: 'refusal', refusal: 'No.' },
      ],
    })
    expect(response.content).toEqual([
      { type: 'text', text: 'Partial' },
      { type: 'text', text: 'No.', refusal: true },
    ])
    expect(response.refusal).toBe('No.')
  })

  it('whole: the same refusal as a part and as message.refusal is one refusal', () => {
    const response = answer({
      content: [{ type: 'refusal', refusal: 'No.' }],
      refusal: 'No.',
    })
    expect(response.content).toEqual([{ type: 'text', text: 'No.', refusal: true }])
    expect(response.refusal).toBe('No.')
  })

  it('streamed: a delta.content refusal part is a marked text event', () => {
    const events = streamed([
      chunk({ role: 'assistant', content: [{ type: 'refusal', refusal: "I'm sorry, " }] }),
      chunk({ content: [{ type: 'refusal', refusal: 'no.' }] }),
      chunk({}, 'stop'),
      '[DONE]',
    ])
    expect(events.filter((e) => e.type === 'text')).toEqual([
      { type: 'text', text: "I'm sorry, ", refusal: true },
      { type: 'text', text: 'no.', refusal: true },
    ])
    const collector = new StreamCollector()
    for (const event of events) collector.add(event)
    expect(collector.response('openai', 'm').refusal).toBe("I'm sorry, no.")
  })
})
