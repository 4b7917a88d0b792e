import { refuseUnknownOptions } from '@hourglass/core'
import type { GatewayOptions } from './createGateway.js'
import { GATEWAY_OPTION_INVALID } from './optionError.js'

/** Every option `createGateway` reads (the type checker keeps the list whole). */
export const GATEWAY_OPTION_NAMES = Object.keys({
  logger: true,
  logLevel: true,
  mountDeadline: true,
  replyReserveMs: true,
  firstTokenTimeoutMs: true,
  maxBodyBytes: true,
  redis: true,
  retryBudgets: true,
  fetch: true,
  clock: true,
  env: true,
  drainTimeoutMs: true,
  trustStainlessTimeout: true,
  metrics: true,
} satisfies Record<keyof GatewayOptions, true>)

/**
 * Core's `refuseUnknownOptions` (a `TypeError` naming each key no one reads
 * and the option probably meant), with the gateway's `code` on it as on
 * every other bad option. Ignored, `drainTimeoutMS: 100` left the 10 s drain
 * in force while its author believed it was 100 ms.
 */
export function refuseUnknownGatewayOptions(
  options: unknown,
  names: readonly string[],
  taker: string,
): void {
  try {
    refuseUnknownOptions(options, names, taker)
  } catch (error) {
    throw Object.assign(error as TypeError, { code: GATEWAY_OPTION_INVALID })
  }
}
