/**
 * A Claude model name's line and version: `claude-opus-4-7` → opus 4.7,
 * `claude-sonnet-5` → sonnet 5.0, under any provider's spelling
 * (`anthropic.claude-opus-4-7`, `us.anthropic.claude-opus-4-7-v1:0`,
 * `claude-opus-4-7@20260416`). A date is no minor version:
 * `claude-sonnet-4-20250514` is Sonnet 4.0. Undefined for a name that says
 * none, and for the Claude 3 names, which put the line last
 * (`claude-3-7-sonnet-20250219`): no rule that reads this one is about them.
 */
export function claudeVersion(
  model: string,
): { family: string; major: number; minor: number } | undefined {
  const match = /claude-([a-z]+)-(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (match === null) return undefined
  const [, family, major, minor] = match
  return { family: family as string, major: Number(major), minor: Number(minor ?? 0) }
}
