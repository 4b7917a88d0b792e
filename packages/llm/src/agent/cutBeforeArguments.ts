import type { ChatResponse, ContentBlock } from '../types.js'

/**
 * The tool call an answer stopped at its token limit was cut in before any
 * of its arguments came, if there is one: the answer's last block, a call
 * whose arguments are empty (`{}`, or blank text). It reads as a call
 * without arguments — the `{}` a streamed call gets once the answer's
 * finish comes (OpenAI's wire), a whole answer's blank `arguments` read as
 * `{}` — but the model was stopped while writing it: run, `send_email` got
 * `{}`, arguments the model never wrote. Arguments that parse to anything
 * else were written whole (a JSON object cut short does not parse), and a
 * call with a block after it was finished. A tool without arguments whose
 * call the limit cut exactly there is not run either: the model reads why,
 * and may call it again — a turn, where running the cut call acts on
 * nothing the model said.
 */
export function cutBeforeArguments(response: ChatResponse): ContentBlock | undefined {
  if (response.finishReason !== 'length') return undefined
  const last = response.content.at(-1)
  if (last?.type !== 'tool_call') return undefined
  const args: unknown = last.arguments
  const empty =
    typeof args === 'string'
      ? args.trim() === ''
      : typeof args === 'object' &&
        args !== null &&
        !Array.isArray(args) &&
        Object.keys(args).length === 0
  return empty ? last : undefined
}
