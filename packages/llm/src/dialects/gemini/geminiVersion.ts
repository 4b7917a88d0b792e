/**
 * The version a Gemini model id names (`gemini-2.5-flash` → 2.5,
 * `models/gemini-3-pro-preview` → 3.0, `gemini-3.1-pro` → 3.1), and
 * whether it is a Pro model; undefined for a name that says none (a tuned
 * model, an alias): what changed between generations — Gemini 3's signed
 * calls, its thinking levels, 2.5's refusal of penalties — is decided by
 * it. One reader for every such rule.
 */
export function geminiVersion(
  model: string,
): { major: number; minor: number; pro: boolean } | undefined {
  const match = /^(?:models\/)?gemini-(\d+)(?:\.(\d+))?(-pro)?/.exec(model)
  if (match === null) return undefined
  return { major: Number(match[1]), minor: Number(match[2] ?? 0), pro: match[3] !== undefined }
}
