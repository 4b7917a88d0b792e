import { claudeVersion } from './claudeVersion.js'

/**
 * What a Claude model does with thinking when the request does not say:
 * - `thinks`: it thinks without a `thinking` field — the Claude 5 models
 *   (`claude-sonnet-5`, `claude-opus-5`, `claude-fable-5`, `claude-mythos-5`:
 *   "adaptive thinking is on by default", promptfoo/promptfoo#10631,
 *   haystack-core-integrations#3526, cortexkit/anthropic-auth#100); Opus 4.7
 *   and 4.8 do not (an omitted `thinking` means none);
 * - `omitsText`: its thinking blocks come with an empty `thinking` field,
 *   the signature still there, unless `thinking.display` is `"summarized"`
 *   — Opus 4.7 and later and the Claude 5 models, whose `display` defaults
 *   to `"omitted"` where earlier models' defaulted to `"summarized"`
 *   (anthropics/claude-code#49268, #49708; docker/docker-agent#2451:
 *   "thinking blocks are returned with an empty thinking field; the
 *   signature is still carried"). The thinking is generated and billed all
 *   the same;
 * - `adaptiveOnly`: it refuses the budget form, `thinking: {type:
 *   "enabled", budget_tokens}` — the same models ("\"thinking.type.enabled\"
 *   is not supported for this model. Use \"thinking.type.adaptive\" and
 *   \"output_config.effort\" to control thinking behavior.", a live 400 in
 *   earendil-works/pi#3297; Opus 4.8 in CherryHQ/cherry-studio#15482,
 *   Sonnet 5 in cortexkit/anthropic-auth#100).
 * A name that says no version (`claude-sonnet-4-20250514` is Sonnet 4: a
 * date is no minor version) is an earlier model.
 */
export function anthropicThinkingDefaults(model: unknown): {
  thinks: boolean
  omitsText: boolean
  adaptiveOnly: boolean
} {
  const version = claudeVersion(model)
  if (version === undefined) return EARLIER
  const { family, major, minor } = version
  if (major >= 5) return { thinks: true, omitsText: true, adaptiveOnly: true }
  const opus47 = family === 'opus' && major === 4 && minor >= 7
  return { thinks: false, omitsText: opus47, adaptiveOnly: opus47 }
}

const EARLIER = { thinks: false, omitsText: false, adaptiveOnly: false } as const
