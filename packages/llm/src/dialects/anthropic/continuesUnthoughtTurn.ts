/** A message of the Messages API body, as far as the thinking rules read it. */
export type Turn = { role: string; content: readonly { type?: unknown }[] }

/**
 * The request's last message is a tool result, and the assistant turn it
 * continues (back to the last user message that is no tool result) does
 * not start with a signed `thinking` or `redacted_thinking` block (unsigned
 * thinking is not sent, see `buildAnthropicRequest`): such a request goes
 * without `thinking` (see `applyAnthropicThinking`).
 */
export function continuesUnthoughtTurn(turns: readonly Turn[]): boolean {
  if (!hasToolResult(turns.at(-1))) return false
  let start: Turn | undefined
  for (let i = turns.length - 2; i >= 0; i--) {
    const turn = turns[i] as Turn
    if (turn.role === 'assistant') start = turn
    else if (!hasToolResult(turn)) break
  }
  const first = start?.content[0]?.type
  return first !== 'thinking' && first !== 'redacted_thinking'
}

function hasToolResult(turn: Turn | undefined): boolean {
  return turn?.role === 'user' && turn.content.some((block) => block.type === 'tool_result')
}
