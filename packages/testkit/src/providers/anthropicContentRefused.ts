import { claudeVersion } from './claudeVersion.js'
import { anthropicErrors } from './errors/anthropicErrors.js'
import type { ErrorReply, ProviderDialect, ProviderRoute } from './types.js'

/**
 * Anthropic's 400 `invalid_request_error` for message content it will not
 * read, in its words; undefined otherwise. The fake answered them 200, so a
 * client that sent one passed against it and failed against the API —
 * and every later turn of that conversation with it:
 * - a message other than a final assistant one with no content (`""`,
 *   `[]`): "messages.N: all messages must have non-empty content except for
 *   the optional final assistant message" (anthropics/claude-code#4416);
 * - a text block that is empty, or only whitespace (a string content too): "messages: text content
 *   blocks must be non-empty" (anthropics/claude-code#59812), "messages:
 *   text content blocks must contain non-whitespace text" (#23440);
 * - a `tool_result` with `is_error: true` and no content: "messages.N.
 *   content.M.tool_result: content cannot be empty if `is_error` is true"
 *   (jlevy/markform#153, can1357/oh-my-pi#2250), which OpenAI and Gemini take;
 * - a conversation ending with the assistant's turn (a prefill) whose text
 *   ends in whitespace: "messages: final assistant content cannot end with
 *   trailing whitespace" (tailcallhq/forgecode#1872);
 * - any prefill, to Claude 4.6 and later (Opus and Sonnet 4.6, Opus 4.7,
 *   the Claude 5 models): "This model does not support assistant message
 *   prefill. The conversation must end with a user message." (a live 400
 *   with a `req_011C…` id in smallmain/vscode-unify-chat-provider#249;
 *   Opus 4.6 in anomalyco/opencode#13768, Sonnet 4.6 in
 *   opencode-dynamic-context-pruning#520, Sonnet 5 in
 *   cortexkit/magic-context#511). The fake continued the prefill;
 * - under `anthropic-version: 2026-10-21` (platform.claude.com, "Migrating
 *   to API version 2026-10-21"), a `document` block directly in an
 *   assistant message, and a text block of a user message with
 *   `citations` (a non-empty list: the field is gone from user text, where
 *   it could only echo an earlier answer's). The docs quote no message: the
 *   fake names the block, in the validator's "messages.N.content.M" form.
 *   The fake took both, as the older versions do.
 * Anthropic's own API only, as `anthropicMaxTokensMissing`.
 */
export function anthropicContentRefused(
  dialect: ProviderDialect,
  route: ProviderRoute,
  body: unknown,
  headers: Record<string, string> = {},
): ErrorReply | undefined {
  if (dialect !== 'anthropic' || route !== 'anthropic-messages') return undefined
  if (typeof body !== 'object' || body === null) return undefined
  const messages = (body as Record<string, unknown>)['messages']
  if (!Array.isArray(messages)) return undefined
  const refuse = (message: string) => anthropicErrors.invalidRequest(message)
  const current = headers['anthropic-version'] === CURRENT_VERSION
  for (const [i, message] of messages.entries()) {
    if (typeof message !== 'object' || message === null) continue
    const { role, content } = message as { role?: unknown; content?: unknown }
    const finalAssistant = i === messages.length - 1 && role === 'assistant'
    if ((content === '' || (Array.isArray(content) && content.length === 0)) && !finalAssistant) {
      return refuse(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      )
    }
    // A string is read as one text block: blank, it is refused as a blank
    // block is (a user message of "\n"; the final assistant one falls to the
    // trailing-whitespace rule below).
    if (typeof content === 'string' && content !== '' && content.trim() === '' && !finalAssistant) {
      return refuse('messages: text content blocks must contain non-whitespace text')
    }
    if (!Array.isArray(content)) continue
    for (const [j, block] of content.entries()) {
      if (typeof block !== 'object' || block === null) continue
      const b = block as Record<string, unknown>
      if (current && role === 'assistant' && b['type'] === 'document') {
        return refuse(
          `messages.${i}.content.${j}: document blocks are not accepted in assistant messages; send the document in a user message`,
        )
      }
      if (current && role === 'user' && b['type'] === 'text' && nonEmptyList(b['citations'])) {
        return refuse(`messages.${i}.content.${j}.text.citations: Extra inputs are not permitted`)
      }
      if (b['type'] === 'text' && typeof b['text'] === 'string') {
        if (b['text'] === '') return refuse('messages: text content blocks must be non-empty')
        if (b['text'].trim() === '') {
          return refuse('messages: text content blocks must contain non-whitespace text')
        }
      }
      if (b['type'] === 'tool_result' && b['is_error'] === true && emptyResult(b['content'])) {
        return refuse(
          `messages.${i}.content.${j}.tool_result: content cannot be empty if \`is_error\` is true`,
        )
      }
    }
  }
  const last = messages.at(-1) as { role?: unknown; content?: unknown } | undefined
  if (last?.role === 'assistant' && refusesPrefill((body as Record<string, unknown>)['model'])) {
    return refuse(
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    )
  }
  if (last?.role === 'assistant' && /\s$/.test(finalText(last.content))) {
    return refuse('messages: final assistant content cannot end with trailing whitespace')
  }
  return undefined
}

/** The API version without document blocks in assistant turns nor citations in user ones. */
const CURRENT_VERSION = '2026-10-21'

function nonEmptyList(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0
}

/** A tool result's content left out, `""` or `[]`. */
function emptyResult(content: unknown): boolean {
  return content === undefined || content === '' || (Array.isArray(content) && content.length === 0)
}

/** The text a final assistant turn ends with: its string, or its last block's if that is text. */
function finalText(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  const block = content.at(-1) as { type?: unknown; text?: unknown } | undefined
  return block?.type === 'text' && typeof block.text === 'string' ? block.text : ''
}

/**
 * Claude 4.6 and later: `claude-opus-4-6`, `claude-sonnet-4-6`,
 * `claude-opus-4-7`, `claude-sonnet-5`. A date is no minor version:
 * `claude-sonnet-4-20250514` is Sonnet 4, which takes a prefill.
 */
function refusesPrefill(model: unknown): boolean {
  const version = claudeVersion(model)
  if (version === undefined) return false
  const { major, minor } = version
  return major > 4 || (major === 4 && minor >= 6)
}
