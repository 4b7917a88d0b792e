export const REDACTED = '[redacted]'

/**
 * Returns a function that replaces every occurrence of any secret in a value
 * (deeply, in strings, keys excluded) with `[redacted]`. The gateway already
 * keeps keys out of what it logs; this is the second lock, so a provider that
 * echoes a key in an error message cannot put it in a log line or a response.
 */
export function redactSecrets(secrets: Iterable<string>): <T>(value: T) => T {
  // Longest first, so a key that contains another is replaced whole.
  const list = [...new Set(secrets)]
    .filter((s) => s.length >= 4)
    .sort((a, b) => b.length - a.length)
  if (list.length === 0) return (value) => value
  const scrubString = (text: string): string => {
    let out = text
    for (const secret of list) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
    return out
  }
  const scrub = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return scrubString(value)
    if (depth > 8 || value === null || typeof value !== 'object') return value
    if (Array.isArray(value)) return value.map((v) => scrub(v, depth + 1))
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = scrub(v, depth + 1)
    return out
  }
  return <T>(value: T) => scrub(value, 0) as T
}
