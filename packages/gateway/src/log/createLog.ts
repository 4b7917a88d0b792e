import pino, { type Logger, type LoggerOptions } from 'pino'
import type { GatewayLogger, LogLevel } from './GatewayLogger.js'
import { REDACTED, redactSecrets } from './redactSecrets.js'

/**
 * Structured places a secret may sit in a record, for pino's `redact`:
 * credentials and the headers that carry them, at the top level or one
 * object down (`upstream.headers.authorization`).
 */
export const REDACT_PATHS: readonly string[] = [
  'authorization',
  'apiKey',
  'apiKeys',
  'password',
  'headers.authorization',
  'headers.cookie',
  'headers["x-api-key"]',
  'headers["api-key"]',
  'headers["x-goog-api-key"]',
  '*.authorization',
  '*.apiKey',
  '*.apiKeys',
  '*.password',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-api-key"]',
  '*.headers["api-key"]',
  '*.headers["x-goog-api-key"]',
]

export type Log = (level: LogLevel, event: string, fields?: Record<string, unknown>) => void

/**
 * The gateway's logging: pino with `redact` on the paths above, plus a scrub
 * of the configured secrets' values out of every string. pino's paths cannot
 * see a key a provider echoes inside an error message or a reason; the scrub
 * can, so it stays as the second lock. `message` becomes pino's `msg`.
 */
export function createLog(
  logger: GatewayLogger | undefined,
  secrets: Iterable<string>,
): { log: Log; pino: Logger } {
  const scrub = redactSecrets(secrets)
  const redact = { paths: [...REDACT_PATHS], censor: REDACTED }
  const own: LoggerOptions = {
    redact,
    formatters: { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
  }
  let target: Logger
  if (typeof logger === 'function') {
    const deliver = logger
    target = pino(own, {
      write(line: string) {
        try {
          deliver(JSON.parse(line))
        } catch {
          // A logger must not take a request down.
        }
      },
    })
  } else if (logger !== undefined) {
    target = logger.child({}, { redact })
  } else {
    target = pino(own, pino.destination({ dest: 2, sync: true }))
  }
  const log: Log = (level, event, fields = {}) => {
    try {
      const { message, ...rest } = scrub(fields)
      target[level]({ event, ...rest }, typeof message === 'string' ? message : event)
    } catch {
      // A logger must not take a request down.
    }
  }
  return { log, pino: target }
}
