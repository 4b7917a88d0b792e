/**
 * The Messages API answers 400 "Requests which include `tool_use` or
 * `tool_result` blocks must define tools" to a history with tool calls and
 * no `tools` — which OpenAI takes, and which agents send on purpose: the
 * turn after the tools ran, asking for a summary without offering them
 * again (LangChain's, the OpenAI Agents SDK's final answers). Such a request
 * declares the functions the history called — each by its name, taking any
 * object — with `tool_choice: none`: Anthropic then takes the history, and
 * the model cannot call one, as the client's request (no tools) said.
 * Anthropic adds its tool-use system prompt for them (a few hundred input
 * tokens, billed). A history with results and no call is left as it is
 * (there is no name to declare; Anthropic refuses the orphaned result).
 */
export function declareHistoryTools(
  turns: readonly { content: readonly Record<string, unknown>[] }[],
  body: Record<string, unknown>,
): void {
  const names = new Set<string>()
  for (const turn of turns) {
    for (const block of turn.content) {
      if (block['type'] === 'tool_use') names.add(block['name'] as string)
    }
  }
  if (names.size === 0) return
  body['tools'] = [...names].map((name) => ({ name, input_schema: { type: 'object' } }))
  body['tool_choice'] = { type: 'none' }
}
