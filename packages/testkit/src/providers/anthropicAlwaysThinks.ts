import { claudeVersion } from './claudeVersion.js'

/**
 * The Claude models whose adaptive thinking cannot be turned off, which
 * answer 400 to `thinking: {type: "disabled"}` ("\"thinking.type.disabled\"
 * is not supported for this model. Use \"thinking.type.adaptive\" and
 * \"output_config.effort\" to control thinking behavior."): Opus 5.5 and
 * later (platform.claude.com, "What's new in Claude Opus 5.5": "thinking
 * can't be disabled"), Fable and Mythos 5 and later ("Migrating to Claude
 * Mythos 5 and Claude Fable 5": `{type: "disabled"}` returns a 400;
 * cline/cline#13203), and Sonnet 5.5 and later — which refuse `disabled` too,
 * in words that name `between_tools` (`anthropicThinkingTypeRefused`), but
 * stop their up-front thinking at `{type: "between_tools"}` ("What's new in
 * Claude Sonnet 5.5"). Opus 5 and Sonnet 5 think by default but can be
 * turned off; Haiku is not among them. The one list of these models:
 * `refusesForcedTool` reads it too.
 * A date is no minor version: `claude-sonnet-5-20260630` is Sonnet 5.
 */
export function anthropicAlwaysThinks(model: unknown): boolean {
  const version = claudeVersion(model)
  if (version === undefined || version.family === 'haiku') return false
  const { family, major, minor } = version
  const since = family === 'opus' || family === 'sonnet' ? 5 : 0
  return major > 5 || (major === 5 && minor >= since)
}
