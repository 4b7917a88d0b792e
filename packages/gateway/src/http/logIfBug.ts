import type { GatewayContext } from '../GatewayContext.js'

/**
 * A bug's 500 (`internal_error`) says nothing to the client, and its request
 * line (or a stream's `stream-interrupted`) only `internal_error`: the error
 * itself — class, message, stack, what it wraps — goes to the log at
 * `error` as `internal-error`, or nobody can find what broke. The log
 * scrubs configured secrets from each field.
 */
export function logIfBug(ctx: GatewayContext, code: string, error: unknown): void {
  if (code === 'internal_error') ctx.log('error', 'internal-error', bugOf(error))
}

/** What a log line says of an error nobody classified. */
function bugOf(error: unknown): Record<string, unknown> {
  try {
    if (!(error instanceof Error)) return { errorClass: typeof error, reason: String(error) }
    const fields: Record<string, unknown> = {
      errorClass: error.name,
      reason: error.message,
      stack: error.stack,
    }
    const causes = causesOf(error)
    if (causes.length > 0) fields.causes = causes
    return fields
  } catch {
    // A hostile getter or toString: the line says so much.
    return { errorClass: typeof error }
  }
}

/** `Class: message` of what `error` wraps — its `cause` chain, an AggregateError's errors — a few deep. */
function causesOf(error: Error): string[] {
  const found: string[] = []
  const seen = new Set<unknown>([error])
  const queue: unknown[] = [
    error.cause,
    ...(error instanceof AggregateError ? [...error.errors].slice(0, 5) : []),
  ]
  while (queue.length > 0 && found.length < 5) {
    const next = queue.shift()
    if (next === undefined || seen.has(next)) continue
    seen.add(next)
    found.push(next instanceof Error ? `${next.name}: ${next.message}` : String(next))
    if (next instanceof Error) queue.push(next.cause)
  }
  return found
}
