/**
 * The major version a Gemini model id names (`gemini-2.5-flash` → 2,
 * `models/gemini-3-pro-preview` → 3), or undefined for a name that says none
 * (a tuned model, an alias): what changed between generations — Gemini 3's
 * signed calls, its thinking levels — is decided by it.
 */
export function geminiMajorVersion(model: string): number | undefined {
  const major = /^(?:models\/)?gemini-(\d+)/.exec(model)?.[1]
  return major === undefined ? undefined : Number(major)
}
