/**
 * The Claude models that answer 400 to a forced tool call (`tool_choice`
 * `any` or `tool`), their adaptive thinking always on (docs.claude.com,
 * "What's new in Claude Opus 5.5", "Thinking in tool and multi-turn
 * workflows"): Opus and Sonnet 5.5 and later, Fable and Mythos 5.1 and later
 * (`claude-opus-5-5`, `claude-fable-5-1`, `claude-mythos-6`). Earlier
 * versions of those lines, and Haiku, take one beside adaptive thinking.
 */
export function refusesForcedTool(model: unknown): boolean {
  if (typeof model !== 'string') return false
  const match = /claude-(opus|sonnet|fable|mythos)-(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (match === null) return false
  const [, family, major, minor] = match
  const since = family === 'opus' || family === 'sonnet' ? 5 : 1
  return Number(major) > 5 || (Number(major) === 5 && Number(minor ?? 0) >= since)
}
