import { MIN_RESERVE_MS } from '@hourglass/core'
import type { ConfigProblem } from './GatewayConfigError.js'

/**
 * What is wrong with a config's `deadline.defaultMs` when nothing is left of
 * it for the call, or undefined. A request without a deadline header gets
 * `defaultMs`; the ingress deadline (when mounted) keeps its reserve off it
 * first — the config's `reserveMs`, else at least the adaptive one's floor —
 * and the handler `replyReserveMs` to write its 504. Where they took the
 * whole budget (`defaultMs: 30`; `defaultMs: 1000` with `reserveMs: 980`),
 * the config was accepted and every such request was a 504 on arrival, no
 * provider asked. One check for createGateway and the CLI, whose own said
 * "more than 25 ms" where 35 were needed.
 */
export function defaultBudgetProblem(
  deadline: { defaultMs: number; maxMs: number; reserveMs?: number | undefined },
  replyReserveMs: number,
  mountDeadline: boolean,
): ConfigProblem | undefined {
  const { defaultMs, maxMs, reserveMs } = deadline
  const ingressReserveMs = mountDeadline ? (reserveMs ?? MIN_RESERVE_MS) : 0
  if (replyReserveMs + ingressReserveMs < defaultMs) return undefined
  const outcome = 'every request without a deadline header would be answered 504 on arrival'
  // Left out, defaultMs follows maxMs: `maxMs: 20` alone lands here, and
  // "raise defaultMs" alone would be refused as above maxMs.
  const follows = defaultMs === maxMs ? '; left out, defaultMs is deadline.maxMs' : ''
  if (reserveMs !== undefined && mountDeadline && defaultMs > replyReserveMs) {
    return {
      field: 'deadline.reserveMs',
      message: `must be less than ${defaultMs - replyReserveMs} ms, deadline.defaultMs less the ${replyReserveMs} ms the gateway keeps to write its 504: ${outcome} (got ${reserveMs})`,
    }
  }
  const kept = !mountDeadline
    ? `the gateway keeps ${replyReserveMs} ms to write its 504 before the deadline`
    : reserveMs === undefined
      ? `the deadline keeps at least ${MIN_RESERVE_MS} ms (the floor of its adaptive reserveMs) and the gateway ${replyReserveMs} ms to write its 504`
      : `the deadline keeps its reserveMs (${reserveMs} ms) and the gateway ${replyReserveMs} ms to write its 504`
  return {
    field: 'deadline.defaultMs',
    message: `must be more than ${replyReserveMs + ingressReserveMs} ms: ${kept}, and ${outcome} (got ${defaultMs}${follows})`,
  }
}
