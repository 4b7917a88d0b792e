import type { PhaseStats, ProbeResult, SuggestedTimeouts } from '@hourglass/fetch'
import { histogram, renderHistogram } from './histogram.js'

/** The settings block to paste: `createFetch` limits (no DNS limit without a lookup) and the slice. */
export function pasteableSettings(suggested: SuggestedTimeouts): Record<string, unknown> {
  return {
    ...(suggested.dnsTimeoutMs !== undefined ? { dnsTimeoutMs: suggested.dnsTimeoutMs } : {}),
    ...(suggested.connectTimeoutMs !== undefined
      ? { connectTimeoutMs: suggested.connectTimeoutMs }
      : {}),
    headersTimeoutMs: suggested.headersTimeoutMs,
    bodyTimeoutMs: suggested.bodyTimeoutMs,
    // Three significant digits, not three decimals: a slice under 0.05 % of
    // a long budget printed `share: 0`, which the slice planner refuses.
    slice: { ms: suggested.sliceMs, share: Number(suggested.share.toPrecision(3)) },
  }
}

/**
 * The probe report: per-phase median / p90 / max / ratio, a histogram, the
 * warnings and the settings. `result.url` is printed as given: pass one
 * without credentials.
 */
export function renderProbe(
  result: ProbeResult,
  suggested: SuggestedTimeouts,
  budgetMs: number,
): string {
  const ms = (v: number) => `${v.toFixed(1)} ms`
  const ratio = (s: PhaseStats) => (s.medianMs > 0 ? `${(s.p90Ms / s.medianMs).toFixed(1)}×` : '—')
  const row = (name: string, s: PhaseStats | undefined, none: string) =>
    s === undefined
      ? `  ${name.padEnd(9)}${none}`
      : `  ${name.padEnd(9)}${ms(s.medianMs).padStart(11)}${ms(s.p90Ms).padStart(11)}${ms(s.maxMs).padStart(11)}${ratio(s).padStart(12)}`
  const { phases } = result
  const total = { medianMs: result.medianMs, p90Ms: result.p90Ms, maxMs: result.maxMs, samples: 0 }
  const lines = [
    `${result.samples.length} ${result.samples.length === 1 ? 'sample' : 'samples'} of ${result.url}`,
    `  ${'phase'.padEnd(9)}${'median'.padStart(11)}${'p90'.padStart(11)}${'max'.padStart(11)}${'p90/median'.padStart(12)}`,
    row('dns', phases.dns, '  none: an IP address needs no lookup'),
    row('connect', phases.connect, '  none: every call reused a connection'),
    row('headers', phases.headers, ''),
    row('body', phases.body, ''),
    // The longest silence between chunks, which bodyTimeoutMs limits and is
    // sized from: a long streamed body has a long `body` and a short gap.
    row('bodyGap', phases.bodyGap, ''),
    row('total', total, ''),
    '',
    'latency (total per call):',
    ...renderHistogram(histogram(result.samples.map((s) => s.totalMs ?? 0))),
    '',
  ]
  const statuses = [...new Set(result.samples.map((s) => s.status))]
  if (statuses.some((s) => s >= 400)) lines.push(`note: statuses seen: ${statuses.join(', ')}`, '')
  for (const warning of suggested.warnings) lines.push(`warning: ${warning}`)
  if (suggested.warnings.length > 0) lines.push('')
  lines.push(
    `suggested settings for a ${budgetMs} ms budget (createFetch options; the slice for your plan),`,
    suggested.cuts.length === 0
      ? 'each covering the slowest sample:'
      : 'each covering the slowest sample unless a warning above says otherwise:',
    JSON.stringify(pasteableSettings(suggested), null, 2),
  )
  return `${lines.join('\n')}\n`
}
