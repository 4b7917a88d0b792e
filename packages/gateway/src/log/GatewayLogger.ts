import type { Logger } from 'pino'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

/**
 * One log record as pino wrote it (`level` as a label, `time` in epoch ms): an event
 * name, flat fields, `msg`, and `requestId` on every line of a request.
 * Never contains an API key.
 */
export interface LogRecord {
  level: LogLevel
  /** `request`, `attempt`, `stream-interrupted`, `limits`, `admission`, `redis`, `shutdown`, … */
  event: string
  msg?: string | undefined
  requestId?: string | undefined
  [field: string]: unknown
}

/**
 * Where the gateway's logs go: a pino logger of yours (the gateway logs
 * through a child of it, which keeps your `redact`, and blanks its own
 * credential fields in the record itself), or a function that
 * receives each record once pino has written and redacted it (tests, a
 * custom pipeline). Default: pino, JSON lines on stderr.
 */
export type GatewayLogger = Logger | ((record: LogRecord) => void)
