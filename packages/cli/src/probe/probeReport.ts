import type { PhaseStats, ProbeResult, SuggestedTimeouts } from '@hourglass/fetch'
import { pasteableSettings } from './renderProbe.js'

interface Stats {
  medianMs: number | null
  p90Ms: number | null
  maxMs: number | null
}

/** `hourglass probe --json`'s object. */
export interface ProbeReport {
  url: string
  budgetMs: number
  samples: {
    status: number
    dnsMs: number | null
    connectMs: number | null
    headersMs: number | null
    bodyMs: number | null
    /** The longest silence in the body (what `bodyTimeoutMs` limits). */
    bodyGapMs: number | null
    totalMs: number | null
  }[]
  total: Stats & { p90OverMedian: number | null }
  phases: {
    dns: Stats | null
    connect: Stats | null
    headers: Stats | null
    body: Stats | null
    /** Each call's longest silence in the body: what `settings.bodyTimeoutMs` is sized from. */
    bodyGap: Stats | null
  }
  settings: Record<string, unknown>
  fits: boolean
  cuts: SuggestedTimeouts['cuts']
  warnings: string[]
}

/**
 * What `hourglass probe --json` prints: every sample, the stats, the
 * settings to paste, what they would cut and the warnings. Times in ms,
 * rounded to 0.1; a phase a call did not go through is null.
 */
export function probeReport(
  result: ProbeResult,
  suggested: SuggestedTimeouts,
  budgetMs: number,
): ProbeReport {
  const stats = (s: PhaseStats | undefined): Stats | null =>
    s === undefined
      ? null
      : { medianMs: round(s.medianMs), p90Ms: round(s.p90Ms), maxMs: round(s.maxMs) }
  return {
    url: result.url,
    budgetMs,
    samples: result.samples.map((s) => ({
      status: s.status,
      dnsMs: round(s.dnsMs),
      connectMs: round(s.connectMs),
      headersMs: round(s.headersMs),
      bodyMs: round(s.bodyMs),
      bodyGapMs: round(s.bodyGapMs),
      totalMs: round(s.totalMs),
    })),
    total: {
      medianMs: round(result.medianMs),
      p90Ms: round(result.p90Ms),
      maxMs: round(result.maxMs),
      p90OverMedian: round(result.ratio),
    },
    phases: {
      dns: stats(result.phases.dns),
      connect: stats(result.phases.connect),
      headers: stats(result.phases.headers),
      body: stats(result.phases.body),
      bodyGap: stats(result.phases.bodyGap),
    },
    settings: pasteableSettings(suggested),
    fits: suggested.fits,
    cuts: suggested.cuts,
    warnings: suggested.warnings,
  }
}

function round(ms: number | undefined): number | null {
  return ms === undefined ? null : Math.round(ms * 10) / 10
}
