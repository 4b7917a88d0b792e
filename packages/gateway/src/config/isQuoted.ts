/**
 * A value wrapped in a pair of quotes, `"…"` or `'…'`: what `KEY="sk-…"`
 * in a file read by `docker run --env-file` (or a systemd EnvironmentFile
 * with single quotes kept) sets the variable to. No provider's credential
 * holds one, and the quotes went out as part of it: every request a 401.
 */
export function isQuoted(value: string): boolean {
  return /^(["']).*\1$/.test(value)
}
