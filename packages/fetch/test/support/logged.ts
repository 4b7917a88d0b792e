import { inspect } from 'node:util'

/**
 * What a logger sees of an error, as one text: pino's walk (`for…in`), JSON,
 * `inspect` (its cause too) and the message. A secret a test plants must be
 * in none of them.
 */
export function logged(error: unknown): string {
  const copied: Record<string, unknown> = {}
  for (const key in error as object) copied[key] = (error as Record<string, unknown>)[key]
  return [
    JSON.stringify(copied),
    JSON.stringify(error),
    inspect(error, { depth: 5 }),
    (error as Error).message,
  ].join('\n')
}
