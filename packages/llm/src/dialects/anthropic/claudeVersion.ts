/**
 * A Claude model name's line and version: `claude-opus-4-7` → opus 4.7,
 * `claude-sonnet-5` → sonnet 5.0, under any provider's spelling
 * (`anthropic.claude-opus-4-7`, `us.anthropic.claude-opus-4-7-v1:0`,
 * `claude-opus-4-7@20260416`). A date is no minor version:
 * `claude-sonnet-4-20250514` is Sonnet 4.0. The Claude 3 names put the line
 * last (`claude-3-7-sonnet-20250219` → sonnet 3.7, `claude-3-haiku-20240307`
 * → haiku 3.0, `claude-3-5-haiku@20241022`): read too, for the one rule
 * about them (`takesThinking`); every other rule reads them as earlier than
 * the models it is about. Undefined for a name that says none
 * (`claude-sonnet-latest`, `claude-2.1`).
 */
export function claudeVersion(
  model: string,
): { family: string; major: number; minor: number } | undefined {
  const match = /claude-([a-z]+)-(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (match !== null) {
    const [, family, major, minor] = match
    return { family: family as string, major: Number(major), minor: Number(minor ?? 0) }
  }
  // No later model was named version first: a name that reads as one
  // (`claude-5-sonnet`) names none Anthropic serves, and says no version.
  const claude3 = /claude-(3)(?:-(\d)(?!\d))?-(opus|sonnet|haiku)/.exec(model)
  if (claude3 === null) return undefined
  const [, major, minor, family] = claude3
  return { family: family as string, major: Number(major), minor: Number(minor ?? 0) }
}
