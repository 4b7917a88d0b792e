import { isThenable } from '@hourglass/core'
import pino, { type Logger, type LoggerOptions } from 'pino'
import {
  blankCredentials,
  CREDENTIAL_FIELDS,
  CREDENTIAL_HEADERS,
  CREDENTIAL_PARENTS,
} from './blankCredentials.js'
import type { GatewayLogger, LogLevel } from './GatewayLogger.js'
import { REDACTED, redactSecrets } from './redactSecrets.js'

/**
 * Structured places a secret may sit in a record, for pino's `redact`:
 * credentials and the headers that carry them, at the top level and under
 * the objects a record may carry (`req`, `request`, `upstream`, `provider`).
 * Spelled out rather than `*.headers…`: pino's wildcard paths cost about
 * 15 µs a line here, the explicit ones about 1.
 */
export const REDACT_PATHS: readonly string[] = [
  '',
  ...CREDENTIAL_PARENTS.map((p) => `${p}.`),
].flatMap((at) => [
  ...CREDENTIAL_FIELDS.map((field) => `${at}${field}`),
  ...CREDENTIAL_HEADERS.map((name) =>
    /^[A-Za-z_$][\w$]*$/.test(name) ? `${at}headers.${name}` : `${at}headers["${name}"]`,
  ),
])

export type Log = (
  level: LogLevel,
  event: string,
  fields?: Record<string, unknown>,
  /** The request's id: the record's first field after `event` (a `requestId` in `fields` wins). */
  requestId?: string,
) => void

/**
 * The gateway's logging: pino with `redact` on the paths above, plus a scrub
 * of the configured secrets' values out of every string. pino's paths cannot
 * see a key a provider echoes inside an error message or a reason; the scrub
 * can, so it stays as the second lock. `message` becomes pino's `msg`.
 * `enabled(level)`: whether a line at `level` is written (build it only then).
 */
export function createLog(
  logger: GatewayLogger | undefined,
  secrets: Iterable<string>,
  level: LogLevel = 'info',
): { log: Log; pino: Logger; enabled(level: LogLevel): boolean } {
  const scrub = redactSecrets(secrets)
  const redact = { paths: [...REDACT_PATHS], censor: REDACTED }
  const own: LoggerOptions = {
    level,
    redact,
    // `time` stays pino's epoch ms (an ISO string costs ~5 µs a line); pino-pretty shows it as a date.
    formatters: { level: (label) => ({ level: label }) },
  }
  let target: Logger
  if (typeof logger === 'function') {
    const deliver = logger
    // The last promise handled: a sink that hands back one pending promise
    // for every line (its connection's) got a handler per line, all kept.
    let handled: unknown
    target = pino(own, {
      write(line: string) {
        try {
          const returned: unknown = deliver(JSON.parse(line))
          // An async function is a `(record) => void` to TypeScript (a sink
          // shipping records over the network): its rejection, unhandled,
          // ended the process, where the same throw in a plain one is dropped.
          if (returned !== handled && isThenable(returned)) {
            handled = returned
            returned.then(undefined, () => {})
          }
        } catch {
          // A logger must not take a request down.
        }
      },
    })
  } else if (logger !== undefined) {
    // No `redact` here: a child's replaces its parent's, and the app's own
    // paths (its censor, its `remove`) stopped applying to the gateway's
    // lines. The same paths are blanked in the record instead (`appsLogger` below).
    target = logger.child({})
  } else {
    target = pino(own, pino.destination({ dest: 2, sync: true }))
  }
  // The gateway's credential paths, for a logger whose `redact` is the app's.
  const appsLogger = typeof logger === 'object'
  const log: Log = (level, event, fields = {}, requestId) => {
    // Before the scrub's copy: a line below the logger's level costs nothing.
    if (!target.isLevelEnabled(level)) return
    try {
      if (isPlainRecord(fields)) {
        // The record built in one pass: the same fields, in the same order,
        // as the copies below make (event, requestId, the rest; `message` out),
        // without four copies of every line's fields (~2 µs a line).
        const record: Record<string, unknown> = { event }
        if (requestId !== undefined) record['requestId'] = scrub(requestId)
        let message: unknown
        for (const key of Object.keys(fields)) {
          if (key === 'message') message = scrub(fields[key], 1)
          else record[key] = scrub(fields[key], 1)
        }
        target[level](
          appsLogger ? blankCredentials(record, REDACTED) : record,
          typeof message === 'string' ? message : event,
        )
        return
      }
      const { message, ...rest } = scrub(
        requestId === undefined ? fields : { requestId, ...fields },
      )
      const record = { event, ...rest }
      target[level](
        appsLogger ? blankCredentials(record, REDACTED) : record,
        typeof message === 'string' ? message : event,
      )
    } catch {
      // A logger must not take a request down.
    }
  }
  return { log, pino: target, enabled: (at) => target.isLevelEnabled(at) }
}

/**
 * An object literal's kind of record (no class, no `toJSON`), which the scrub
 * would copy field by field: a record of another kind (an `Error`, a `Date`)
 * is scrubbed whole, as it always was.
 */
function isPlainRecord(fields: object): boolean {
  const proto = Object.getPrototypeOf(fields)
  return (
    (proto === Object.prototype || proto === null) &&
    typeof (fields as { toJSON?: unknown }).toJSON !== 'function' &&
    !Array.isArray(fields)
  )
}
