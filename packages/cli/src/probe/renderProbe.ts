import type { ProbeResult, SuggestedTimeouts } from '@hourglass/fetch'
import { histogram, renderHistogram } from './histogram.js'

/** The probe report: per-phase median / p90 / ratio, a histogram, the warning and the settings. */
export function renderProbe(
  result: ProbeResult,
  suggested: SuggestedTimeouts,
  budgetMs: number,
): string {
  const ms = (v: number) => `${v.toFixed(1)} ms`
  const ratio = (median: number, p90: number) =>
    median > 0 ? `${(p90 / median).toFixed(1)}×` : '—'
  const row = (name: string, median: number, p90: number) =>
    `  ${name.padEnd(9)}${ms(median).padStart(11)}${ms(p90).padStart(11)}${ratio(median, p90).padStart(12)}`
  const { phases } = result
  const lines = [
    `${result.samples.length} samples of ${result.url}`,
    `  ${'phase'.padEnd(9)}${'median'.padStart(11)}${'p90'.padStart(11)}${'p90/median'.padStart(12)}`,
    row('dns', phases.dns.medianMs, phases.dns.p90Ms),
    row('connect', phases.connect.medianMs, phases.connect.p90Ms),
    row('headers', phases.headers.medianMs, phases.headers.p90Ms),
    row('body', phases.body.medianMs, phases.body.p90Ms),
    row('total', result.medianMs, result.p90Ms),
    '',
    'latency (total per call):',
    ...renderHistogram(histogram(result.samples.map((s) => s.totalMs ?? 0))),
    '',
  ]
  const statuses = [...new Set(result.samples.map((s) => s.status))]
  if (statuses.some((s) => s >= 400)) lines.push(`note: statuses seen: ${statuses.join(', ')}`, '')
  const warning = suggested.warning ?? result.warning
  if (warning) lines.push(`warning: ${warning}`, '')
  const settings = {
    dnsTimeoutMs: suggested.dnsTimeoutMs,
    connectTimeoutMs: suggested.connectTimeoutMs,
    headersTimeoutMs: suggested.headersTimeoutMs,
    bodyTimeoutMs: suggested.bodyTimeoutMs,
    slice: { ms: suggested.sliceMs, share: Math.round(suggested.share * 1000) / 1000 },
  }
  lines.push(
    `suggested settings for a ${budgetMs} ms budget (createFetch options; the slice for your plan):`,
    JSON.stringify(settings, null, 2),
  )
  return `${lines.join('\n')}\n`
}
