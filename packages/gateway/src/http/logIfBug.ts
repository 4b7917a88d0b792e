import { fieldOf, isError } from '@hourglass/core'
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

/**
 * What a log line says of an error nobody classified. Each field read on its
 * own (`fieldOf` never throws): a throwing `cause` getter lost the readable
 * message and stack too, the line saying only `errorClass: object`.
 */
function bugOf(error: unknown): Record<string, unknown> {
  if (!isError(error)) {
    let reason: string
    try {
      reason = String(error)
    } catch {
      // A hostile toString: the line says so much.
      return { errorClass: typeof error }
    }
    return { errorClass: typeof error, reason }
  }
  const fields: Record<string, unknown> = {
    errorClass: fieldOf(error, 'name'),
    reason: fieldOf(error, 'message'),
    stack: fieldOf(error, 'stack'),
  }
  let causes: string[] = []
  try {
    causes = causesOf(error)
  } catch {
    // A hostile member of what it wraps: the rest of the line stands.
  }
  if (causes.length > 0) fields.causes = causes
  return fields
}

/** `Class: message` of what `error` wraps — its `cause` chain, an AggregateError's errors — a few deep. */
function causesOf(error: Error): string[] {
  const found: string[] = []
  const seen = new Set<unknown>([error])
  const queue: unknown[] = [
    fieldOf(error, 'cause'),
    ...(error instanceof AggregateError ? [...error.errors].slice(0, 5) : []),
  ]
  while (queue.length > 0 && found.length < 5) {
    const next = queue.shift()
    if (next === undefined || seen.has(next)) continue
    seen.add(next)
    try {
      found.push(
        isError(next) ? `${fieldOf(next, 'name')}: ${fieldOf(next, 'message')}` : String(next),
      )
    } catch {
      // A hostile cause (its toString throws): the others stand.
    }
    if (isError(next)) queue.push(fieldOf(next, 'cause'))
  }
  return found
}
