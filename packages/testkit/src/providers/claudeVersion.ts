/** The family and version a Claude model id names. */
export interface ClaudeVersion {
  family: string
  major: number
  minor: number
}

/**
 * The family and version a Claude model id names — `claude-sonnet-4-5`,
 * `claude-opus-4-1-20250805`, `claude-3-7-sonnet-20250219`, Bedrock's
 * `us.anthropic.claude-haiku-4-5-20251001-v1:0`, Vertex's
 * `claude-3-5-haiku@20241022` — or undefined for a name that says none
 * (`claude-sonnet-latest`, `claude-mythos-preview`, `claude-2.1`). A date is
 * no minor version: `claude-sonnet-4-20250514` is Sonnet 4.0. The one reader
 * of these names, so the rules that ask it agree on what a name says.
 */
export function claudeVersion(model: unknown): ClaudeVersion | undefined {
  if (typeof model !== 'string') return undefined
  const current = /claude-(opus|sonnet|haiku|fable|mythos)-(\d+)(?:-(\d)(?!\d))?/.exec(model)
  if (current !== null) {
    const [, family = '', major, minor] = current
    return { family, major: Number(major), minor: Number(minor ?? 0) }
  }
  // Claude 3.x put the version first; no later model was named so, and a
  // name that reads as one (`claude-5-sonnet`) names none Anthropic serves.
  const before4 = /claude-([1-3])(?:-(\d)(?!\d))?-(opus|sonnet|haiku)/.exec(model)
  if (before4 === null) return undefined
  const [, major, minor, family = ''] = before4
  return { family, major: Number(major), minor: Number(minor ?? 0) }
}
