export type LogLevel = 'info' | 'warn' | 'error'

/** One log record: an event name and flat fields. Never contains an API key. */
export interface LogRecord {
  level: LogLevel
  /** `request`, `attempt`, `stream-interrupted`, `limits`, `admission`, … */
  event: string
  [field: string]: unknown
}

/** Where the gateway's log records go. Injected so tests (and your log pipeline) can collect them. */
export type GatewayLogger = (record: LogRecord) => void

/** The default: one JSON line per record on stderr, with an ISO time. */
export const stderrJsonLogger: GatewayLogger = (record) => {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`)
}
