import { anthropicAlwaysThinks } from './anthropicAlwaysThinks.js'
import { claudeVersion } from './claudeVersion.js'

/**
 * The Claude models that answer 400 to a forced tool call (`tool_choice`
 * `any` or `tool`): those whose adaptive thinking is always on
 * (`anthropicAlwaysThinks`; docs.claude.com, "What's new in Claude Opus
 * 5.5", "Thinking in tool and multi-turn workflows") but Fable and Mythos 5,
 * which think always and still take one — the refusal came with their 5.1
 * (platform.claude.com, "Claude Fable 5.1 migration guide";
 * withceleste/celeste-python#393). Every other model takes one beside
 * adaptive thinking.
 */
export function refusesForcedTool(model: unknown): boolean {
  if (!anthropicAlwaysThinks(model)) return false
  const version = claudeVersion(model)
  const fableOrMythos = version?.family === 'fable' || version?.family === 'mythos'
  return !(fableOrMythos && version?.major === 5 && version.minor === 0)
}
