import type { Clock } from '@hourglass/core'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import type { KeyWait } from './http/errorReply.js'
import type { Admission, ModelAdapter, ModelPrice, RetryBudgetRegistry } from './llm.js'
import type { LogLevel } from './log/GatewayLogger.js'
import type { GatewayMetrics } from './metrics/GatewayMetrics.js'

/** What every handler of one gateway shares. @internal */
export interface GatewayContext {
  config: GatewayConfig
  adapters: Map<string, ModelAdapter>
  admission: Admission
  retryBudgets: RetryBudgetRegistry | undefined
  /** Prices by provider name, then model name, for per-request cost budgets. */
  providerPrices: Record<string, Record<string, ModelPrice>>
  clock: Clock
  replyReserveMs: number
  firstTokenTimeoutMs: number
  metrics: GatewayMetrics
  /** Logs through pino, keys scrubbed; inside a request every record carries its `requestId`. */
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void
  /** Whether a line at `level` would be written: a line that would not is not built. */
  logEnabled(level: LogLevel): boolean
  /** How long until a key of a provider may be used again, and what holds it (admission's forecast), for the error a failed call gets. */
  keyWait: KeyWait
  /** Scrubs every configured key out of a value bound for the client. */
  redact<T>(value: T): T
}
