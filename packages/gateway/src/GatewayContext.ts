import type { Clock } from '@hourglass/core'
import type { GatewayConfig } from './config/gatewayConfigSchema.js'
import type { Admission, ModelAdapter, ModelPrice, RetryBudgetRegistry } from './llm.js'
import type { LogLevel } from './log/GatewayLogger.js'

/** What every handler of one gateway shares. @internal */
export interface GatewayContext {
  config: GatewayConfig
  adapters: Map<string, ModelAdapter>
  admission: Admission
  retryBudgets: RetryBudgetRegistry | undefined
  /** Prices by model name, merged over providers, for per-request cost budgets. */
  prices: Record<string, ModelPrice>
  clock: Clock
  replyReserveMs: number
  firstTokenTimeoutMs: number
  /** Logs with every configured key scrubbed out. */
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void
  /** Scrubs every configured key out of a value bound for the client. */
  redact<T>(value: T): T
}
