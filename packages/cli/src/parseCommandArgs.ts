import { UsageError } from './UsageError.js'

/**
 * Runs a strict `node:util` `parseArgs` call, its errors turned into one-line
 * `UsageError`s (Node's own messages run to several sentences).
 */
export function parseCommandArgs<T>(command: string, parse: () => T): T {
  try {
    return parse()
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const first = message.split('. ')[0]!.replace(/\.$/, '')
    throw new UsageError(
      `hourglass ${command}: ${first.charAt(0).toLowerCase()}${first.slice(1)} (see hourglass ${command} --help)`,
      { cause: error },
    )
  }
}

/** A whole number option within [min, max], or a UsageError naming it. */
export function intOption(
  command: string,
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max = 2_147_483_647,
): number {
  if (value === undefined) return fallback
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `hourglass ${command}: --${name} must be a whole number from ${min} to ${max}, got '${value}'`,
    )
  }
  return n
}
