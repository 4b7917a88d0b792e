import { malformedReply } from '../../errors/ProviderReplyError.js'
import { argumentsText } from '../blocks.js'
import { EACH, type JsonPathStep, rawJsonValues } from '../rawJsonValues.js'

/**
 * A tool call's `function.arguments` as the text the call keeps. OpenAI
 * sends JSON text (a string); some OpenAI-compatible servers send the JSON
 * object itself — llama.cpp's llama-server by default in March 2026
 * (ggml-org/llama.cpp#20198), TGI (huggingface/text-generation-inference#2136).
 * Read as a string only, such a call came out with arguments `{}`, and an
 * agent ran the tool with none of them (an email with no recipient).
 *
 * A value that is no string is taken as the text the body wrote it as
 * (`written`, when that text is at hand: an integer past 2^53 is kept as
 * the model wrote it, as a string's is), else written again. None (absent,
 * `null`) is `''`, the call without arguments it was before. One too deep
 * to write again, with no text to take, is a reply that cannot be read.
 */
export function argumentsSent(value: unknown, written: () => string | undefined): string {
  if (typeof value === 'string') return value
  if (value === undefined || value === null) return ''
  const text = written() ?? argumentsText(value)
  if (text === undefined) throw malformedReply('tool call (arguments nested too deep)')
  return text
}

/**
 * The text of each tool call's `function.arguments` in `text` (one
 * `chat.completion` answer, or one chunk: `message` or `delta` below
 * `choices[0]`), by the call's place in `tool_calls`; walked only once a
 * call's arguments came as no string.
 */
export function argumentsWritten(
  text: string | undefined,
  holder: 'message' | 'delta',
): (index: number) => string | undefined {
  let byIndex: Map<number, string> | undefined
  return (index) => {
    if (text === undefined) return undefined
    if (byIndex === undefined) {
      byIndex = new Map()
      const path: JsonPathStep[] = [
        'choices',
        0,
        holder,
        'tool_calls',
        EACH,
        'function',
        'arguments',
      ]
      for (const found of rawJsonValues(text, path)) {
        const at = found.indexes[0]
        if (at !== undefined) byIndex.set(at, found.text)
      }
    }
    return byIndex.get(index)
  }
}
