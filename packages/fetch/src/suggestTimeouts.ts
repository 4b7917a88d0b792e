import { optionError, refuseUnknownOptions } from '@hourglass/core'
import type { PhaseStats, ProbeResult, ProbeSample } from './probe.js'

/** A setting `suggestTimeouts` sizes. */
export type SuggestedSetting =
  | 'dnsTimeoutMs'
  | 'connectTimeoutMs'
  | 'headersTimeoutMs'
  | 'bodyTimeoutMs'
  | 'sliceMs'

/** Measured samples a suggested setting would have cut: they took longer than it. */
export interface SuggestionCut {
  setting: SuggestedSetting
  limitMs: number
  /** How many samples took longer than `limitMs`, of the `of` that went through the phase. */
  samples: number
  of: number
  /** `samples / of`, 0–1. */
  share: number
  /** The fastest and the slowest of the samples cut, ms. */
  fromMs: number
  toMs: number
}

export interface SuggestedTimeouts {
  /** Undefined when no sample looked a name up (an IP address): there is no DNS phase to limit. */
  dnsTimeoutMs: number | undefined
  /** Undefined when no sample opened a connection (keep-alive calls). */
  connectTimeoutMs: number | undefined
  headersTimeoutMs: number
  bodyTimeoutMs: number
  /** The whole call, ms. Use it as a fixed `{ ms }` slice. */
  sliceMs: number
  /** `sliceMs` as a share of `budgetMs` (0–1), for a share slice. */
  share: number
  /** False when even the p90 call does not fit in the budget. */
  fits: boolean
  /**
   * Settings that would have cut measured samples. Empty unless the budget
   * capped a setting below the slowest sample it saw.
   */
  cuts: SuggestionCut[]
  /** Everything the numbers alone do not say, one sentence each: the lottery, the fit, each cut. */
  warnings: string[]
}

export interface SuggestOptions {
  /** Multiplier over each p90. Default 2. */
  headroom?: number
  /** Multiplier over the slowest sample, so a setting covers what was seen. Default 1.25. */
  maxHeadroom?: number
  /** No phase limit below this, ms (loopback p90s are near 0). Default 10. */
  floorMs?: number
}

/**
 * Turn a probe into phase limits and a slice. Each gets the larger of its
 * p90 × `headroom` and its slowest sample × `maxHeadroom` — so no sample the
 * probe saw would have been cut — with phase limits at least `floorMs`, and
 * all of them at most the budget. When the budget caps a setting below the
 * slowest sample, `cuts` and `warnings` say which share of the samples it
 * would have cut. No DNS limit is suggested when no sample looked a name up.
 * `bodyTimeoutMs` is sized from the longest silences between body chunks
 * (`phases.bodyGap`), not the body's whole length.
 */
export function suggestTimeouts(
  result: ProbeResult,
  budgetMs: number,
  options: SuggestOptions = {},
): SuggestedTimeouts {
  // Every suggestion is at most the budget, and 0 is "no limit" to each of
  // these settings: a budget of 0 (or NaN) suggested exactly that — every
  // phase unbounded — under a budget meant to be tight.
  if (typeof budgetMs !== 'number' || !Number.isFinite(budgetMs) || !(budgetMs > 0)) {
    throw optionError('budgetMs', 'a finite number > 0 (ms)', budgetMs)
  }
  // Checked as every numeric option is: a NaN (an env variable left unset)
  // made every suggestion NaN — `fits: true`, no warning — and a misspelt
  // key (`headRoom`) left the default in place without a word.
  refuseUnknownOptions(options, SUGGEST_OPTION_NAMES, 'suggestTimeouts()')
  const headroom = finite('headroom', options.headroom, 2, '')
  const maxHeadroom = finite('maxHeadroom', options.maxHeadroom, 1.25, '')
  const floorMs = finite('floorMs', options.floorMs, 10, ' (ms)')
  // At least 1 ms for the same reason (a floorMs of 0 over a phase measured at 0 ms).
  const cover = (s: Pick<PhaseStats, 'p90Ms' | 'maxMs'>, floor: number) =>
    Math.min(
      budgetMs,
      Math.max(1, floor, Math.ceil(s.p90Ms * headroom), Math.ceil(s.maxMs * maxHeadroom)),
    )
  const { phases, samples } = result
  const dnsTimeoutMs = phases.dns && cover(phases.dns, floorMs)
  const connectTimeoutMs = phases.connect && cover(phases.connect, floorMs)
  const headersTimeoutMs = cover(phases.headers, floorMs)
  // bodyTimeoutMs limits the silence between chunks, not the whole body: a
  // stream of 8 s with a chunk every 50 ms was given 16 s (and, under a 5 s
  // budget, a warning that it would cut every sample). Sized from the
  // longest gaps; from the whole body (never shorter) only for a result
  // without them (built by hand).
  const gaps = phases.bodyGap
  const bodyTimeoutMs = cover(gaps ?? phases.body, floorMs)
  const sliceMs = cover(result, 0)
  const fits = result.p90Ms <= budgetMs

  const cuts = [
    cut('dnsTimeoutMs', dnsTimeoutMs, samples, (s) => s.dnsMs),
    cut('connectTimeoutMs', connectTimeoutMs, samples, (s) => s.connectMs),
    cut('headersTimeoutMs', headersTimeoutMs, samples, (s) => s.headersMs ?? 0),
    cut('bodyTimeoutMs', bodyTimeoutMs, samples, (s) => (gaps ? s.bodyGapMs : s.bodyMs) ?? 0),
    cut('sliceMs', sliceMs, samples, (s) => s.totalMs ?? 0),
  ].filter((c) => c !== undefined)

  const warnings: string[] = []
  if (result.warning) warnings.push(result.warning)
  if (!fits) {
    warnings.push(
      `p90 (${Math.round(result.p90Ms * 10) / 10} ms) exceeds the ${budgetMs} ms budget: the call will often fail; raise the budget, add a fallback, or speed up the upstream`,
    )
  }
  for (const c of cuts) {
    warnings.push(
      `${c.setting === 'sliceMs' ? 'the slice' : c.setting} (${c.limitMs} ms, capped by the ${budgetMs} ms budget) would have cut ${c.samples} of ${c.of} samples (${percent(c.share)}), which took ${range(c)}`,
    )
  }
  return {
    dnsTimeoutMs,
    connectTimeoutMs,
    headersTimeoutMs,
    bodyTimeoutMs,
    sliceMs,
    share: budgetMs > 0 ? sliceMs / budgetMs : 1,
    fits,
    cuts,
    warnings,
  }
}

const SUGGEST_OPTION_NAMES = Object.keys({
  headroom: true,
  maxHeadroom: true,
  floorMs: true,
} satisfies Record<keyof SuggestOptions, true>)

/** A finite number ≥ 0, or `fallback` when undefined. */
/** `null` is the default, as for every numeric option of this package (options.ts). */
function finite(name: string, value: number | undefined, fallback: number, unit: string): number {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw optionError(name, `a finite number ≥ 0${unit}`, value)
  }
  return value
}

function cut(
  setting: SuggestedSetting,
  limitMs: number | undefined,
  samples: readonly ProbeSample[],
  phaseMs: (s: ProbeSample) => number | undefined,
): SuggestionCut | undefined {
  if (limitMs === undefined) return undefined
  const seen = samples.map(phaseMs).filter((v): v is number => v !== undefined)
  const over = seen.filter((v) => v > limitMs)
  if (over.length === 0) return undefined
  return {
    setting,
    limitMs,
    samples: over.length,
    of: seen.length,
    share: over.length / seen.length,
    fromMs: Math.round(Math.min(...over)),
    toMs: Math.round(Math.max(...over)),
  }
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10} %`
}

function range(c: SuggestionCut): string {
  return c.fromMs === c.toMs ? `${c.fromMs} ms` : `${c.fromMs}–${c.toMs} ms`
}
