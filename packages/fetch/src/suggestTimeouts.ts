import type { ProbeResult } from './probe.js'

export interface SuggestedTimeouts {
  dnsTimeoutMs: number
  connectTimeoutMs: number
  headersTimeoutMs: number
  bodyTimeoutMs: number
  /** The whole call, ms: p90 × `headroom`. Use it as a fixed `{ ms }` slice. */
  sliceMs: number
  /** `sliceMs` as a share of `budgetMs` (0–1), for a share slice. */
  share: number
  /** False when even the p90 call does not fit in the budget. */
  fits: boolean
  warning: string | undefined
}

export interface SuggestOptions {
  /** Multiplier over each p90. Default 2. */
  headroom?: number
  /** No phase limit below this, ms (loopback p90s are near 0). Default 10. */
  floorMs?: number
}

/**
 * Turn a probe into phase limits and a slice: each phase gets its p90 ×
 * `headroom` (at least `floorMs`, at most the budget); the slice is the whole
 * call's p90 × `headroom`, capped at the budget.
 */
export function suggestTimeouts(
  result: ProbeResult,
  budgetMs: number,
  options: SuggestOptions = {},
): SuggestedTimeouts {
  const headroom = options.headroom ?? 2
  const floorMs = options.floorMs ?? 10
  const limit = (p90: number) => Math.min(budgetMs, Math.max(floorMs, Math.ceil(p90 * headroom)))
  const sliceMs = Math.min(budgetMs, Math.ceil(result.p90Ms * headroom))
  const fits = result.p90Ms <= budgetMs
  return {
    dnsTimeoutMs: limit(result.phases.dns.p90Ms),
    connectTimeoutMs: limit(result.phases.connect.p90Ms),
    headersTimeoutMs: limit(result.phases.headers.p90Ms),
    bodyTimeoutMs: limit(result.phases.body.p90Ms),
    sliceMs,
    share: budgetMs > 0 ? sliceMs / budgetMs : 1,
    fits,
    warning: !fits
      ? `p90 (${Math.round(result.p90Ms)} ms) exceeds the ${budgetMs} ms budget: the call will often fail; raise the budget, add a fallback, or speed up the upstream`
      : result.warning,
  }
}
