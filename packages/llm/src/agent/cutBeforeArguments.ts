import { isMarkedUnfinished } from '../dialects/unfinishedCall.js'
import type { ChatResponse, ContentBlock } from '../types.js'

/**
 * The tool call an answer stopped at its token limit was cut in, if the
 * parser could tell: the answer's last block, a call whose end is not in
 * what came of it (`markUnfinished`) — an OpenAI-compatible call with no
 * argument text at all (its `{}` the parser's: a call cut right after its
 * name reads the same), Anthropic's last `tool_use` of a `max_tokens`
 * answer, whatever its `input` holds (the members finished before the cut:
 * `{ to }`, the body never came; or `{}`) — or arguments that are blank
 * text (`partialContent`'s `""`). Run, `send_email` got arguments
 * the model never finished. Arguments that came as text and do not parse
 * are refused as such (`runTurns`); a call written whole before the cap —
 * `{}` streamed as text, Gemini's whole `functionCall` parts — is no cut
 * call, and a call with a block after it was finished.
 */
export function cutBeforeArguments(response: ChatResponse): ContentBlock | undefined {
  if (response.finishReason !== 'length') return undefined
  const last = response.content.at(-1)
  if (last?.type !== 'tool_call') return undefined
  // Blank text: the `""` of a stream cut before any argument came
  // (`StreamInterruptedError`'s `partialContent`), handed on as an answer.
  const blank = typeof last.arguments === 'string' && last.arguments.trim() === ''
  return blank || isMarkedUnfinished(last) ? last : undefined
}
